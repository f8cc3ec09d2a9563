"""Check a bootstrap.json as bench/gpu_check.sh expects it (the test suite runs it on CPU reports).

    python bench/check_report.py REPORT --device cuda [--backend nccl] [--group] [--tf32] [--trained]

Exits 1 naming the first field that is not as expected (or why the report cannot be read); prints the
fields it read. The report is read as the typed bootstrap.doors.records.Report.
"""

import sys

from bootstrap.doors import outbound
from bootstrap.doors.inbound import Unreadable
from bootstrap.doors.records import Report, read_report


def preflight_problems(report: Report, network: bool) -> list:
    """The preflight check ran on this GPU and passed: a TF32 matmul above the preset's floor, its result
    right; with ``network``, the all_reduce timed and the network NCCL chose read from its log."""
    check = report.preflight
    if check is None or check.status != "ok":
        return [f"preflight is {check.to_json() if check else None}, not status ok"]
    found = []
    tflops = check.ranks[0].tflops if check.ranks else None
    if tflops is None or check.min_tflops is None or tflops < check.min_tflops:
        found.append(f"preflight TFLOP/s {tflops} is not above the floor {check.min_tflops}")
    if check.precision != "high":
        found.append(f"preflight precision is {check.precision!r}, not 'high' (TF32)")
    if network and not (check.collective and check.network):
        found.append(f"preflight timed {len(check.collective)} all_reduce sizes and read network {check.network!r}"
                     f" (note: {check.note})")
    return found


def problems(report: Report, device: str, backend, group: bool, tf32: bool, trained: bool) -> list:
    found = []
    failed = [c.name for c in report.checks if not c.ok]
    if failed:
        found.append(f"checks failed: {failed}")
    if report.job.status != "completed":
        found.append(f"job.status is {report.job.status!r}, not 'completed'")
    if not (report.device or "").startswith(device):
        found.append(f"device is {report.device!r}, not {device}")
    if tf32 and report.torch.matmul_precision != "high":
        found.append(f"torch.matmul_precision is {report.torch.matmul_precision!r}, not 'high' (TF32)")
    dist = report.distributed
    if group:
        # process_group: the group's state when the job started; teardown: what became of it at the end.
        seen = tuple(str(v) if v is not None else None for v in (dist.process_group, dist.teardown, dist.backend))
        if seen != ("created", "destroyed", backend):
            found.append(f"distributed (process_group, teardown, backend) is {seen}, not ('created', 'destroyed', "
                         f"{backend!r})")
    metrics = report.job.metrics or {}
    if trained and not {"samples_per_s", "final_loss"} <= metrics.keys():
        found.append(f"job.metrics lacks samples_per_s or final_loss: {sorted(metrics)}")
    return found


def main(argv=None) -> int:
    parser = outbound.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--device", required=True, help="what report.device must start with: cuda or cpu")
    parser.add_argument("--backend", help="the group's backend, with --group")
    parser.add_argument("--group", action="store_true", help="the bootstrap made a process group and destroyed it")
    parser.add_argument("--tf32", action="store_true", help="matmul precision 'high'")
    parser.add_argument("--trained", action="store_true", help="train_stub's metrics are recorded")
    parser.add_argument("--preflight", action="store_true", help="the preflight check ran and passed its floor")
    parser.add_argument("--network", action="store_true", help="with --preflight: the all_reduce timed and "
                                                               "NCCL's network read")
    args = parser.parse_args(argv)
    try:
        report = read_report(args.report)
    except Unreadable as error:
        outbound.say(f"FAILED: {args.report}: {error}", err=True, one_line=True)
        return 1
    for c in report.checks:
        outbound.say(f"  check {c.name:<20} required {c.required:<8} found {str(c.found):<12} ok={c.ok}")
    outbound.say(f"  device {report.device}  distributed {report.distributed.to_json()}")
    metrics = report.job.metrics
    if args.trained and metrics:
        outbound.say(f"  samples/s {metrics.get('samples_per_s')}  final loss {metrics.get('final_loss')}")
    found = problems(report, args.device, args.backend, args.group, args.tf32, args.trained)
    if args.preflight:
        check = report.preflight
        outbound.say(f"  preflight {check.to_json() if check else None}")
        found += preflight_problems(report, args.network)
    for problem in found:
        outbound.say(f"FAILED: {problem}", err=True)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
