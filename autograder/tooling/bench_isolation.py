"""What the sandbox's isolation costs per notebook: `python -m autograder bench --isolation`.

The same submissions are graded alternately at an isolated station (allow-list root, namespaces,
sandbox uid, private tmpfs) and at one with isolation off (limits only), round after round in one
process, so a change of load on the machine falls on both alike. The difference of the medians is
the most the allow-list root can add to a notebook's grading time.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from pathlib import Path

from autograder import course
from autograder.collect.submissions import Submission
from autograder.judge.grade import grade_one
from autograder.run import sandbox, workdirs
from autograder.run.runner import Station
from autograder.tooling.checkout import examples


def isolation_cost(submissions: Path, rounds: int = 3, student: str = "alice") -> dict:
    """{mode: [seconds per notebook, every round]} for `student`'s notebooks under `submissions`,
    graded with and without isolation, interleaved."""
    subs = [
        Submission(student, lesson, submissions / student / f"{lesson}.ipynb")
        for lesson in course.lessons()
        if (submissions / student / f"{lesson}.ipynb").is_file()
    ]
    limits = sandbox.Limits()
    times: dict = {"isolated": [], "not isolated": []}
    points: dict = {}
    with workdirs.grading_dir() as tmp:
        stations = {
            "isolated": Station(limits, tmp / "isolated"),
            "not isolated": Station(replace(limits, isolate=False), tmp / "open"),
        }
        try:
            for station in stations.values():
                station.base.mkdir()
                grade_one(subs[0], station)  # start the zygote, claim the uid: not counted
            for _ in range(rounds):
                for sub in subs:
                    for mode, station in stations.items():
                        t0 = time.perf_counter()
                        g = grade_one(sub, station)
                        times[mode].append(time.perf_counter() - t0)
                        points.setdefault(sub.lesson, set()).add(sum(r.points for r in g.rows))
        finally:
            for station in stations.values():
                station.close()
    differ = {lesson: p for lesson, p in points.items() if len(p) > 1}
    if differ:
        raise RuntimeError(f"isolated and not isolated gave different points: {differ}")
    return times


def main(rounds: int = 3) -> int:
    examples()
    from examples.build import CLASS

    if not sandbox.can_isolate():
        print("isolation needs root on Linux: nothing to compare here")
        return 1
    times = isolation_cost(CLASS, rounds)
    n = len(times["isolated"])
    print(f"\n{n} notebook gradings each, interleaved ({rounds} rounds of one student's notebooks)")
    print(f"{'station':14s} {'median s':>9s} {'mean s':>8s}")
    for mode, ts in times.items():
        print(f"{mode:14s} {statistics.median(ts):9.3f} {statistics.mean(ts):8.3f}")
    on, off = (statistics.median(times[m]) for m in ("isolated", "not isolated"))
    print(f"isolation costs {on - off:+.3f} s a notebook ({(on - off) / off:+.1%})")
    return 0
