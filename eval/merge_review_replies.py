#!/usr/bin/env python3
"""Joins review replies written for dumped requests into a review recording.

`querypilot-eval ... --dump-missing DIR` writes each review request that the recording has no reply
for as DIR/NNNN.request.txt (as shared/tools/model_bridge.py writes requests). Whoever acts as the
model answers each one as DIR/NNNN.response.txt; independent replies to the same requests go to further
folders (DIR-b/NNNN.response.txt, ...), each written without seeing the others.

Usage: merge_review_replies.py RECORDING.json DIR [DIR-b ...]

RECORDING.json (created when missing): [{"request": text, "replies": [text, ...]}, ...], the form
`querypilot-eval --review-recording` reads, keyed by the request's exact text. A request already in
the recording keeps its replies (it is not merged twice); a request with no response in DIR is left
out (answer it, and merge again). Replies are kept in the order of the folders given.
"""
import glob
import json
import os
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[0] + "\n\nusage: merge_review_replies.py RECORDING.json DIR [DIR-b ...]",
              file=sys.stderr)
        return 2
    out_path, folders = argv[1], argv[2:]
    for folder in folders:
        if not os.path.isdir(folder):
            print(f"merge_review_replies.py: {folder} is not a folder", file=sys.stderr)
            return 1
    recording = []
    if os.path.exists(out_path):
        try:
            with open(out_path, encoding="utf-8", newline="") as f:
                recording = json.load(f)
        except ValueError as e:
            print(f"merge_review_replies.py: {out_path} is not JSON: {e}", file=sys.stderr)
            return 1
        if not isinstance(recording, list):
            print(f"merge_review_replies.py: {out_path} is not a list of {{request, replies}}", file=sys.stderr)
            return 1
    known = {e.get("request") for e in recording if isinstance(e, dict)}
    added = unanswered = already = 0
    for req in sorted(glob.glob(os.path.join(folders[0], "*.request.txt"))):
        # newline="": the text exactly as written, the key the replay looks up.
        with open(req, encoding="utf-8", newline="") as f:
            text = f.read()
        if text in known:
            already += 1
            continue
        stem = os.path.basename(req)[: -len(".request.txt")]
        replies = []
        for folder in folders:
            path = os.path.join(folder, stem + ".response.txt")
            if os.path.exists(path):
                with open(path, encoding="utf-8", newline="") as f:
                    replies.append(f.read())
        if not replies:
            unanswered += 1
            continue
        recording.append({"request": text, "replies": replies, "source": f"{os.path.basename(os.path.normpath(folders[0]))}/{stem}"})
        known.add(text)
        added += 1
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        json.dump(recording, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, out_path)
    print(f"{added} requests added, {already} already recorded, {unanswered} without a response; "
          f"{len(recording)} in {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
