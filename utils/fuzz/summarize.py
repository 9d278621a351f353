#!/usr/bin/python3
"""The table of a campaign (utils/fuzz/campaign.sh) for
bench/results/fuzz.md: per fuzzer, its executions, the edges it covered
of those instrumented (Lamina's code and the upstream header code it
inlines), features, the minimised corpus and what it found.
  utils/fuzz/summarize.py CAMPAIGN_DIR   (BUILD_DIR/campaign)"""

import pathlib
import re
import sys

COMMON = pathlib.Path(__file__).resolve().parent / "common.sh"


def fuzzer_names():
    """The fuzzers of utils/fuzz/common.sh, in its order."""
    text = COMMON.read_text()
    return re.search(r"^all_fuzzers=\((.*?)\)", text, re.MULTILINE).group(1).split()


def main():
    campaign = pathlib.Path(sys.argv[1])
    print("| fuzzer | seconds | executions | edges covered | features | "
          "corpus (inputs, KiB) | crashes / timeouts / OOMs |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for work in [campaign / name for name in fuzzer_names()
                 if (campaign / name / "log").exists()]:
        log = (work / "log").read_text(errors="replace")
        pcs = int(re.search(r"PC tables \((\d+) PCs\)", log).group(1))
        last = re.findall(r"#(\d+): cov: (\d+) ft: (\d+) corp: \d+ exec/s: "
                          r"\d+ oom/timeout/crash: (\d+)/(\d+)/(\d+) "
                          r"time: (\d+)s", log)[-1]
        runs, cov, ft, ooms, timeouts, crashes, seconds = map(int, last)
        corpus = list((campaign / "merged" / work.name).iterdir())
        kib = sum(p.stat().st_size for p in corpus) / 1024
        print(f"| lamina-{work.name}-fuzzer | {seconds} | {runs:,} | "
              f"{cov:,} of {pcs:,} ({100 * cov / pcs:.0f} %) | {ft:,} | "
              f"{len(corpus)}, {kib:.0f} | {crashes} / {timeouts} / {ooms} |")


if __name__ == "__main__":
    main()
