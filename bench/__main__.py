"""``python -m bench``: run | floor (internal) | gen."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from bench import run as runmod

HELP = """Caldera benchmark.

  python -m bench run [--quick | --smoke]    measure; writes bench/results/latest.{json,md}, latency.png
                                             (--quick: quick.*, --smoke: smoke.*)
  python -m bench gen [--quick | --smoke]    only generate the workload bodies (bench/results/tmp)
  python -m bench soak --duration 600        Volcano's traffic at a fixed rate; exit 1 on errors or drift
  python -m bench cluster [--smoke]          vc-scheduler's own cycle with plugins in-tree, through
                                             Caldera, and through a neutral extender, at scale
  python -m bench report [--check]           bench/README's generated sections from bench/results
  python -m bench shapes                     the workloads' object sizes (bench/results/workload-shapes.json)
  python -m bench compare-churn              sessionState compare's differences while pods bind and
                                             finish (the e2e scenario compare-churn)
  python -m bench churn [--smoke]            compare mode under real churn at scale (--size NxP), and
                                             the cycle and jobs' time to start in-tree vs cluster mode
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the benchmark")
    g = r.add_mutually_exclusive_group()
    g.add_argument(
        "--quick", action="store_true", help="fewer requests, no 500-node snapshot (~3 min)"
    )
    g.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes, a few requests each (< 60 s); non-zero exit on any failure",
    )
    r.add_argument(
        "--targets",
        default=None,
        help="comma list of caldera,go,floor,marshal (default: all; the Go baseline and Volcano's "
        "marshal cost (bench/go-marshal) build from published modules, Volcano v1.14.1; a cold "
        "build takes ~4 min, which --smoke does not count)",
    )
    r.add_argument(
        "--out", default=str(runmod.RESULTS), help="results directory (default bench/results)"
    )
    r.add_argument(
        "--caldera-cmd",
        default=None,
        help="command that runs the caldera CLI (default: 'uv run --no-sync caldera')",
    )
    gen = sub.add_parser("gen", help="generate workloads only")
    g2 = gen.add_mutually_exclusive_group()
    g2.add_argument("--quick", action="store_true")
    g2.add_argument("--smoke", action="store_true")
    from bench import churn, cluster, compare_churn, explain, soak

    for name, module, text in (
        ("soak", soak, "fixed-rate soak of every verb (see bench/soak.py)"),
        ("cluster", cluster, "Volcano's cycle at cluster scale (bench/cluster.py)"),
        ("explain", explain, "the decision record's memory per 1,000 jobs and time per call"),
        ("compare-churn", compare_churn, "compare mode's differences under churn"
         " (bench/compare_churn.py)"),
        ("churn", churn, "compare mode under real churn at scale (bench/churn.py, TestChurn)"),
    ):  # fmt: skip
        module.add_arguments(sub.add_parser(name, help=text))
    rp = sub.add_parser(
        "report", help="write bench/README's generated sections from the committed results"
    )
    rp.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 where the README differs"
    )
    sh = sub.add_parser("shapes", help="the object sizes of the workloads' bodies")
    from bench import shapes

    sh.add_argument("--out", type=Path, default=shapes.RESULTS, help="default: %(default)s")
    f2 = sub.add_parser("asgi", help=argparse.SUPPRESS)
    f2.add_argument("plan")
    f2.add_argument("out")
    f = sub.add_parser("floor", help=argparse.SUPPRESS)
    f.add_argument("plan")
    f.add_argument("out")
    a = ap.parse_args(argv)

    if a.cmd == "run":
        mode = "smoke" if a.smoke else "quick" if a.quick else "full"
        default = "caldera,go,floor,marshal"
        targets = {t.strip() for t in (a.targets or default).split(",") if t.strip()}
        cmd = shlex.split(a.caldera_cmd) if a.caldera_cmd else None
        return runmod.main(mode, targets, Path(a.out), cmd)
    if a.cmd == "floor":
        return runmod.floor_main(a.plan, a.out)
    if a.cmd == "asgi":
        return runmod.asgi_main(a.plan, a.out)
    if a.cmd == "gen":
        mode = "smoke" if a.smoke else "quick" if a.quick else "full"
        suite = runmod.build_suite(mode, runmod.TMP / mode)
        for ld in suite.loads:
            print(f"{ld.name}: {ld.body} ({ld.body_bytes / 1024:.0f} KiB)")
        return 0
    if a.cmd == "soak":
        return soak.main(a)
    if a.cmd == "shapes":
        return shapes.main(a.out)
    if a.cmd == "explain":
        return explain.main(a)
    if a.cmd == "report":
        from bench import readme

        return readme.main(a.check)
    if a.cmd == "cluster":
        return cluster.main(a)
    if a.cmd == "compare-churn":
        code = compare_churn.main(a)
        if code == 0 and compare_churn.writes_readme(a):
            from bench import readme

            readme.write()
            print(f"bench/README.md: written from {a.out}")
        return code
    if a.cmd == "churn":
        code = churn.main(a)
        if churn.writes_readme(a) and churn.OUT.exists():
            from bench import readme

            readme.write(only={"churn"})
            print(f"bench/README.md: the churn section written from {churn.OUT}")
        return code
    return 2


if __name__ == "__main__":
    sys.exit(main())
