"""A Hydra app whose task returns values that cannot all become metrics: ``kind`` picks one.

The job must still end ``completed``, each such value listed in ``job.metrics_skipped``.
"""

import hydra


class Unconvertible:
    """A number-like object whose every conversion raises."""

    ndim = 0

    def __float__(self):
        raise ValueError("no float")

    def __index__(self):
        raise TypeError("no index")

    def item(self):
        raise RuntimeError("no item")


class BadFloat(float):
    def __float__(self):
        raise ArithmeticError("no float")


class Unprintable:
    def __str__(self):
        raise RuntimeError("no str")

    def __hash__(self):
        return 1


def returned(kind: str):
    if kind == "cycle":
        value = {"loss": 0.5, "inner": {}}
        value["self"] = value
        value["inner"]["up"] = value
        return value
    if kind == "deep":
        value = inner = {"loss": 0.5}
        for _ in range(100_000):  # deeper than any recursion limit
            inner["next"] = {}
            inner = inner["next"]
        return value
    if kind == "bigint":
        return {"loss": 0.5, "count": 10**400}
    if kind == "bare_bigint":
        return 10**400
    if kind == "raising":
        return {"loss": 0.5, "bad": Unconvertible(), "bad_float": BadFloat(1.0)}
    if kind == "huge":
        return {f"m{i}": float(i) for i in range(200_000)}
    if kind == "keys":
        return {"loss": 0.5, 10**5000: 1.0, Unprintable(): 2.0, 3: 4.0}
    if kind == "tuple":
        return 0.5, "text"
    raise ValueError(f"unknown kind {kind}")


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg):
    return returned(cfg.kind)


if __name__ == "__main__":
    main()
