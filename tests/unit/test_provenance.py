"""The provenance's pure parts: git's status and digests, the container's markers, the driver's version line,
the package lists and what changed between two, the masking of a diff, and the preset's bounds. The real git,
packages and jobs are in tests/e2e/test_provenance.py."""
import hashlib

import pytest

import bootstrap
from bootstrap.core import facts
from bootstrap.doors.masking import masked_source
from bootstrap.doors.records import Report
from bootstrap.provenance import collect, git, machine, packages


def test_git_status_gives_commit_branch_dirty_and_untracked_names_apart():
    head = b"# branch.oid 3f2a9c0e\0# branch.head main\0"
    changed = b"1 .M N... 100644 100644 100644 aa bb app.py\0"
    untracked = b"? notes.txt\0? data/new file.csv\0! ignored.log\0"
    expected = ("3f2a9c0e", "main", True, ["notes.txt", "data/new file.csv"])
    assert git.parse_status(head + changed + untracked) == expected
    assert git.parse_status(head + b"? only_new.py\0") == ("3f2a9c0e", "main", False, ["only_new.py"])
    fresh = b"# branch.oid (initial)\0# branch.head (detached)\0"
    assert git.parse_status(fresh) == (None, None, False, [])
    # a rename's entry is followed by its source path, which is no entry of its own
    renamed = b"2 R. N... 100644 100644 100644 aa bb R100 new.py\0? not-an-entry.py\0? x.txt\0"
    assert git.parse_status(head + renamed) == ("3f2a9c0e", "main", True, ["x.txt"])


def test_digests_are_of_sorted_names_and_none_for_none():
    assert git.names_digest([]) is None
    assert git.names_digest(["b", "a"]) == git.names_digest(["a", "b"]) == hashlib.sha256(b"a\nb").hexdigest()


def test_a_cut_diff_says_how_much_it_keeps():
    assert git.cut_note(1024, 5000) == b"\n# hydra-train-bootstrap: git.diff holds the first 1024 of 5000 bytes " \
                                       b"of `git diff HEAD`\n"


@pytest.mark.parametrize("environ, files, expected", [
    ({}, set(), None),
    ({}, {"/.dockerenv"}, "docker"),
    ({}, {"/run/.containerenv"}, "podman"),
    ({}, {"/run/.containerenv", "/.dockerenv"}, "podman"),  # Podman's own marker first
    ({"APPTAINER_CONTAINER": "/img.sif"}, set(), "apptainer"),
    ({"SINGULARITY_CONTAINER": "/img.sif"}, set(), "apptainer"),
    ({}, {"/.singularity.d"}, "apptainer"),
    ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, {"/.dockerenv"}, "kubernetes"),  # the pod is what users name
    ({"KUBERNETES_SERVICE_HOST": ""}, set(), None),
])
def test_the_container_comes_from_each_engine_s_documented_marker(environ, files, expected):
    assert machine.container(environ, exists=files.__contains__) == expected


@pytest.mark.parametrize("text, version", [
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
     "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)", "550.54.15"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder@U16)",
     "570.86.15"),
    ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.161.08  Wed Feb 28 01:23:45 UTC 2024", "535.161.08"),
    ("not a driver's file", None),
])
def test_the_driver_version_is_read_from_the_kernel_module_s_line(text, version):
    assert machine.driver_version(text) == version


def test_package_names_compare_as_pip_does_and_the_list_reads_back():
    assert packages.normalized("Hydra_Core") == packages.normalized("hydra.core") == "hydra-core"
    lines = ["hydra-core==1.3.8", "torch==2.13.0+cpu"]
    assert packages.parse(packages.text(lines)) == {"hydra-core": "1.3.8", "torch": "2.13.0+cpu"}
    assert packages.parse("not a line\n==1\nx==\nOmegaConf==2.3.1\n") == {"omegaconf": "2.3.1"}
    assert packages.digest(lines) == hashlib.sha256("\n".join(lines).encode()).hexdigest()


def test_what_changed_between_two_package_lists_is_named_by_package():
    a = {"torch": "2.12.0", "numpy": "2.1", "gone": "1.0"}
    b = {"torch": "2.13.0", "numpy": "2.1", "new": "0.1"}
    assert packages.compare(a, b) == [("gone", "1.0", None), ("new", None, "0.1"), ("torch", "2.12.0", "2.13.0")]
    assert packages.compare(a, a) == []


def test_the_installed_packages_are_this_environment_s():
    found = packages.parse(packages.text(packages.installed()))
    assert found["torch"].startswith("2.13.0") and "hydra-core" in found and "omegaconf" in found
    names = [line.split("==")[0] for line in packages.installed()]
    assert names == sorted(set(names))  # by name, each once
    from importlib import metadata  # what Python's own reader finds, the first on sys.path winning

    expected = {}
    for distribution in metadata.distributions():
        expected.setdefault(packages.normalized(distribution.metadata["Name"]), distribution.version)
    assert packages.parse(packages.text(packages.installed())) == expected


def test_a_legacy_egg_info_without_a_version_in_its_name_is_read_from_its_file(tmp_path, monkeypatch):
    (tmp_path / "Legacy_Pkg.egg-info").mkdir()
    info = "Metadata-Version: 1.0\nName: Legacy_Pkg\nVersion: 3.1\n"
    (tmp_path / "Legacy_Pkg.egg-info" / "PKG-INFO").write_text(info)
    (tmp_path / "wheel_pkg-2.0.dist-info").mkdir()
    monkeypatch.setattr("sys.path", [str(tmp_path)])
    assert packages.installed() == ["legacy-pkg==3.1", "wheel-pkg==2.0"]


@pytest.mark.parametrize("line, shown", [
    ('+API_KEY = "abc123xyz"', "+API_KEY = ***"),
    ("-password: hunter2", "-password: ***"),
    ('+    "hub_token": "hf_abc",', '+    "hub_token": ***'),
    ("+export WANDB_API_KEY=abc", "+export WANDB_API_KEY=***"),
    ("+key = ${oc.env:KEY}", "+key = ${oc.env:KEY}"),  # a reference holds no secret
    ("+tokenizer = load(x)", "+tokenizer = load(x)"),  # a marker word inside a name is no credential's name
    ("+monkey = 3", "+monkey = 3"),
    ('+url = "https://user:pw@host/x"', '+url = "https://user:***@host/x"'),
    (" def f(a=1): pass", " def f(a=1): pass"),
])
def test_a_diff_line_that_assigns_a_credential_is_masked(line, shown):
    assert masked_source(line) == shown
    assert masked_source(f"{line}\n{line}") == f"{shown}\n{shown}"


def test_a_diff_that_adds_a_private_key_and_an_authorization_header_keeps_neither():
    body = ["+MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
            "+VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK"]
    diff = "\n".join(["+++ b/deploy/key.pem", "+-----BEGIN RSA PRIVATE KEY-----", *body,
                      "+-----END RSA PRIVATE KEY-----", "+++ b/client.py",
                      '+headers = {"Authorization": "Bearer abcDEF123456ghiJKL"}',
                      "+curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA==' https://x"])
    shown = masked_source(diff)
    assert all(line[1:] not in shown for line in body)
    assert "abcDEF123456ghiJKL" not in shown and "dXNlcjpwYXNzd29yZA==" not in shown
    assert "+-----BEGIN RSA PRIVATE KEY-----***-----END RSA PRIVATE KEY-----" in shown
    assert '"Authorization": "Bearer ***"' in shown and "+++ b/client.py" in shown


def test_each_rank_of_a_world_names_its_own_files():
    assert collect.file_names(0, 1) == ("git.diff", "packages.txt")
    assert collect.file_names(3, 8) == ("git.rank3.diff", "packages.rank3.txt")


def test_without_a_collection_the_host_is_recorded_and_the_status_says_why():
    for status in ("off", "unfinished", "preview"):
        found = collect.without_collection(status)
        assert found.status == status and found.host == machine.host() and found.git is None
    assert collect.so_far(None, enabled=False, wait=True)[0].status == "off"
    assert collect.so_far(None, enabled=True, wait=True)[0].status == "unfinished"


def test_the_preview_says_it_collected_nothing():
    preview = bootstrap.initialize({"threads": {"intra_op": 1}}).preview()
    assert preview.provenance.status == "preview" and preview.provenance.host == machine.host()


@pytest.mark.parametrize("seconds", [0, -1, 601])
def test_provenance_seconds_must_be_positive_and_within_the_timeout(seconds):
    with pytest.raises(bootstrap.ConfigError, match=r"env\.provenance\.seconds=.*env\.provenance\.enabled=false"):
        bootstrap.initialize({"provenance": {"seconds": seconds}, "distributed": {"timeout_s": 600}})


def test_the_facts_name_the_commit_the_tree_and_the_packages():
    report = Report.from_json({"provenance": {
        "status": "collected", "host": "n1", "packages": 3, "packages_digest": "ab" * 32,
        "git": {"root": "/app", "commit": "c0ffee", "branch": "main", "dirty": True, "diff_digest": "12" * 32,
                "untracked": 2, "untracked_digest": "34" * 32}}})
    shown = facts.facts(report)["provenance"]
    assert shown == {"host": "n1", "git commit": "c0ffee", "git branch": "main",
                     "git tree": "dirty (diff 121212121212)", "git untracked files": "2 (343434343434)",
                     "packages": "3 (abababababab)"}
    # the sweep summary's note on the jobs' environments: the code and packages, not the host
    environment = facts.environment(report)
    assert environment["git commit"] == "c0ffee" and environment["packages"] == "3 (abababababab)"
    assert "host" not in environment
