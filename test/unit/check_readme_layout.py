#!/usr/bin/env python3
"""README.md's "Layout" table against the tree.

Every top-level folder (hidden ones but .ci/ and the build outputs .gitignore lists left out) has a row, every
folder of src/ has a row of its own (src/name/) or is named in the src/ row, and every path the table names exists:
a row's own paths (its first cell) from the repository's root, a folder (name/) or a source or document file named
in a row's text under one of the row's folders (or a folder the row names in it) or from the root.

  check_readme_layout.py <repository>
"""
import fnmatch
import os
import re
import sys

FILE_LIKE = re.compile(r"^[A-Za-z0-9_+-][A-Za-z0-9_./+-]*(/|\.(sh|py|md|cc|h|cuh|cu|cmake|json|in))$")


def layout_rows(readme):
    rows, in_layout = [], False
    for line in readme.splitlines():
        if line.startswith("## "):
            in_layout = line.strip() == "## Layout"
        elif in_layout and line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            rows.append((re.findall(r"`([^`]+)`", cells[0]), " | ".join(cells[1:])))
    return rows


def main(root):
    with open(os.path.join(root, "README.md")) as f:
        rows = layout_rows(f.read())
    if not rows:
        print("FAIL: README.md has no \"## Layout\" table")
        return 1
    bad = []
    row_paths = [p for paths, _ in rows for p in paths]
    src_text = next((text for paths, text in rows if "src/" in paths), "")
    for paths, text in rows:
        for p in paths:
            if not os.path.exists(os.path.join(root, p)):
                bad.append("the table names %s, which does not exist" % p)
        names = re.findall(r"`([^`]+)`", text)
        folders = [n for n in names if n.endswith("/") and FILE_LIKE.match(n)]
        bases = paths + [p + d for p in paths for d in folders] + [""]
        for name in names:
            if "*" in name or not FILE_LIKE.match(name):
                continue
            if not any(os.path.exists(os.path.join(root, base, name)) for base in bases):
                bad.append("the row of %s names %s, found neither there nor at the root" % (", ".join(paths), name))
    with open(os.path.join(root, ".gitignore")) as f:
        ignored = [l.strip().strip("/") for l in f if re.match(r"^/[^/]+/\s*$", l)]
    top = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
                 and (not d.startswith(".") or d == ".ci") and not any(fnmatch.fnmatch(d, g) for g in ignored))
    for d in top:
        if not any(p == d + "/" or p.startswith(d + "/") for p in row_paths):
            bad.append("the top-level folder %s/ has no row" % d)
    src = sorted(d for d in os.listdir(os.path.join(root, "src")) if os.path.isdir(os.path.join(root, "src", d))
                 and d != "__pycache__")
    for d in src:
        if "src/%s/" % d not in row_paths and "`%s/`" % d not in src_text:
            bad.append("src/%s/ is neither a row nor named in the src/ row" % d)
    for b in bad:
        print("FAIL: " + b)
    if bad:
        return 1
    print("PASS: README's Layout table matches the tree: %d rows, %d top-level folders, %d folders of src/"
          % (len(rows), len(top), len(src)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
