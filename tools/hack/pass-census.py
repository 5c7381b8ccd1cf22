#!/usr/bin/env python3
"""Counts Courier's dispatch passes by cause, from a log written at V(4).

Each pass logs "Planned dispatch" with the check's state, whether a
placement is recorded, whether the Workload or the job was behind in the
cache, whether the job ended, the requeue the plan asked for and what it
does. Passes with the same facts are counted together, the most common
first, so that a run's passes that find nothing to do stand out.

Usage: tools/hack/pass-census.py COURIER_LOG [ROWS]

The log of a bench phase is _output/<dir>/manager/courier/courier.log of
`courier-bench compare --courier-log-level 4 --keep`; it covers the whole
run, the harness's warm-up jobs and every phase included.
"""
import collections
import json
import sys

ACTIONS = ("delete", "create", "record", "createJob", "syncJob", "finalSync", "statusChange")


def requeue(seconds):
    if not seconds:
        return "no requeue"
    return "requeue %gs" % round(seconds, 1)


def cause(entry):
    facts = [entry.get("check") or "no check", "placed" if entry.get("placement") else "not placed"]
    facts += [name for name in ("behind", "jobBehind") if entry.get(name)]
    if entry.get("jobEnded"):
        facts.append("job ended")
    facts.append(requeue(entry.get("requeueAfter")))
    facts.append("+".join(a for a in ACTIONS if entry.get(a)) or "nothing to do")
    return ", ".join(facts)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    rows = int(argv[2]) if len(argv) > 2 else 20
    counts = collections.Counter()
    with open(argv[1]) as log:
        for line in log:
            if '"Planned dispatch"' not in line:
                continue
            try:
                counts[cause(json.loads(line))] += 1
            except ValueError:
                continue
    total = sum(counts.values())
    print("%d passes" % total)
    for facts, n in counts.most_common(rows):
        print("%7d %5.1f%%  %s" % (n, 100.0 * n / total, facts))


if __name__ == "__main__":
    main(sys.argv)
