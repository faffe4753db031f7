"""After a failed ctest run: each failed test's own verdict and its last lines, printed last.

ctest --output-on-failure prints a failing test's output where the test ended, often hundreds of
lines before the summary; a CI log cut to its tail then names the test but not why it failed.
Usage: python3 scripts/ctest_tails.py BUILD_DIR [LINES]"""
import os
import re
import sys


def main():
    build = sys.argv[1]
    keep = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    tmp = os.path.join(build, "Testing", "Temporary")
    try:
        failed = [line.split(":", 1)[1].strip() for line in open(os.path.join(tmp, "LastTestsFailed.log"))
                  if ":" in line]
        log = open(os.path.join(tmp, "LastTest.log"), errors="replace").read().splitlines()
    except OSError as e:
        print(f"ctest_tails: {e}")
        return
    outputs, name, body = {}, None, None
    for line in log:
        m = re.match(r"^\d+/\d+ Test: (.*)$", line)
        if m:
            name, body = m.group(1), None
        elif line == "Output:" and name is not None:
            body = []
        elif line == "<end of output>" and body is not None:
            outputs[name] = body[1:]  # the dashes under "Output:"
            name, body = None, None
        elif body is not None:
            body.append(line)
    verdict = re.compile(r"FAIL|[Ee]rror|Assertion|assert|Traceback|Segmentation|timed? ?out", re.I)
    for test in failed:
        out = outputs.get(test)
        print(f"======== failed: {test} ========")
        if out is None:
            print("(no output recorded)")
            continue
        marks = [x for x in out[:-keep] if verdict.search(x)][-10:]
        if marks:
            print("-- lines that look like its verdict, before its last lines:")
            print("\n".join(marks))
        print(f"-- its last {min(keep, len(out))} lines:")
        print("\n".join(out[-keep:]))


if __name__ == "__main__":
    main()
