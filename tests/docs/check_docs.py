#!/usr/bin/env python3
"""The user documentation against the real command (label docs).

Reads README.md, docs/*.md, slurm/README.md and datasets/README.md and checks that
  1. every `dptrain` command line parses: in a fenced code block, a line (after an optional `$ `
     prompt, an environment assignment or a launcher such as mpiexec or srun) that runs dptrain, and
     every inline code span that starts with `dptrain `, names subcommands that exist, and every
     --option on it is one that the subcommand's `--help` prints;
  2. every relative Markdown link [text](path#anchor) resolves to a file or folder, and its anchor to
     a heading of the target page (GitHub's slugs);
  3. every option table names every option its subcommand's `--help` prints, and nothing else. An
     option table is a Markdown table right after a comment naming its subcommands:

         <!-- options: dptrain train -->
         <!-- options: dptrain train, dptrain bench, dptrain eval -->

     Its rows' first cells hold the options (`--batch-size B`; aliases as `--loader-threads N`,
     `--threads N`). A subcommand's options may be spread over several tables, on several pages: the
     union must name each option (one of its aliases suffices). Every subcommand that takes no further
     subcommand has at least one table.

Usage:
  check_docs.py DPTRAIN SOURCE_DIR              check the pages; exit 1 naming each problem
  check_docs.py --self-test DPTRAIN SOURCE_DIR  the check must fail on copies of the pages broken on
                                                purpose (a bogus option, a missing table row, ...)
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

OPTION = re.compile(r"--[A-Za-z0-9][A-Za-z0-9_-]*")
HELP_OPTION_LINE = re.compile(r"^  (?:-[A-Za-z],)?(--[A-Za-z0-9][\w-]*(?:,--[A-Za-z0-9][\w-]*)*)")
TABLE_MARKER = re.compile(r"^\s*<!--\s*options:\s*(.*?)\s*-->\s*$")
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
LAUNCHERS = {"mpiexec", "mpirun", "srun", "timeout", "env", "time", "sudo"}
SEPARATORS = {"&&", "||", ";", "|", "&"}
# Fenced blocks in these languages hold no shell commands.
NOT_SHELL = {"python", "py", "json", "yaml", "yml", "cpp", "c", "cmake", "text", "ini", "toml"}


def pages(root: Path):
    found = [root / "README.md"]
    found += sorted((root / "docs").glob("*.md"))
    found += [root / "slurm" / "README.md", root / "datasets" / "README.md"]
    return [p for p in found if p.is_file()]


class Cli:
    """`dptrain ... --help`, run once per command and parsed: its options and subcommands."""

    def __init__(self, dptrain: str):
        self.dptrain = dptrain
        self.cache = {}

    def help(self, path: tuple):
        if path not in self.cache:
            result = subprocess.run([self.dptrain, *path, "--help"], capture_output=True, text=True, timeout=60)
            if result.returncode != 0:
                self.cache[path] = None
            else:
                self.cache[path] = parse_help(result.stdout)
        return self.cache[path]

    def leaves(self, path=()):
        """Every command that takes no subcommand, as a tuple of words."""
        info = self.help(path)
        if info is None:
            return []
        if not info["subcommands"]:
            return [path] if path else []
        out = []
        for sub in info["subcommands"]:
            out += self.leaves(path + (sub,))
        return out


def parse_help(text: str):
    options, groups, subcommands = set(), [], []
    in_subcommands = False
    for line in text.splitlines():
        if line.strip() == "Subcommands:":
            in_subcommands = True
            continue
        if in_subcommands:
            m = re.match(r"^  (\S+)", line)
            if m:
                subcommands.append(m.group(1))
                continue
            if not line.strip():
                in_subcommands = False
            continue
        m = HELP_OPTION_LINE.match(line)
        if m:
            names = m.group(1).split(",")
            options.update(names)
            groups.append(names)
    return {"options": options, "groups": groups, "subcommands": subcommands}


def slug(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def split_page(path: Path):
    """(line number, text, in_code, language) for every line, and the page's anchors."""
    lines, anchors, counts = [], set(), {}
    fence, language = None, ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence, language = m.group(1)[0] * 3, m.group(2).lower()
            lines.append((number, line, True, None))
            continue
        if fence is not None and line.strip().startswith(fence):
            fence = None
            lines.append((number, line, True, None))
            continue
        lines.append((number, line, fence is not None, language if fence is not None else None))
        if fence is None:
            h = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if h:
                base = slug(h.group(1))
                n = counts.get(base, 0)
                counts[base] = n + 1
                anchors.add(base if n == 0 else f"{base}-{n}")
    for m in re.finditer(r'<a\s+(?:name|id)="([^"]+)"', path.read_text(encoding="utf-8")):
        anchors.add(m.group(1))
    return lines, anchors


class Checker:
    def __init__(self, root: Path, cli: Cli):
        self.root = root
        self.cli = cli
        self.problems = []
        self.commands = self.links = self.tables = 0
        self.anchor_cache = {}
        self.documented = {}  # command path -> set of options named by its tables
        self.table_seen = set()

    def problem(self, path: Path, line: int, message: str):
        self.problems.append(f"{path.relative_to(self.root)}:{line}: {message}")

    # ---------------------------------------------------------------- commands
    def check_command(self, path: Path, line: int, words: list, text: str):
        """words: the command line's words from `dptrain` on."""
        self.commands += 1
        command = ()
        i = 1
        info = self.cli.help(command)
        if info is None:
            self.problem(path, line, f"'{self.cli.dptrain} --help' failed")
            return
        while i < len(words):
            word = words[i]
            if word in SEPARATORS or word.startswith(">") or word.startswith("2>"):
                break
            if info["subcommands"] and not word.startswith("-"):
                if word in info["subcommands"]:
                    command += (word,)
                    info = self.cli.help(command)
                    if info is None:
                        self.problem(path, line, f"'dptrain {' '.join(command)} --help' failed: {text}")
                        return
                elif re.fullmatch(r"<.*>|[A-Z][A-Z_]*|\.\.\.", word):
                    return  # a placeholder for any subcommand
                else:
                    self.problem(path, line, f"'dptrain {' '.join(command + (word,))}': no such subcommand "
                                 f"(dptrain {' '.join(command)} has: {', '.join(info['subcommands'])}): {text}")
                    return
                i += 1
                continue
            stripped = word.lstrip("[(")
            if stripped.startswith("--"):
                m = OPTION.match(stripped)
                if m and m.group(0) not in info["options"]:
                    self.problem(path, line, f"'dptrain {' '.join(command)}' has no option {m.group(0)} "
                                 f"(not in its --help): {text}")
            i += 1

    @staticmethod
    def shell_words(text: str):
        try:
            return shlex.split(text, comments=True)
        except ValueError:
            return re.sub(r"\s#.*$", "", text).split()

    def command_words(self, text: str):
        """The words from dptrain on, when this shell line runs dptrain (itself, after environment
        assignments, or under a launcher such as mpiexec or srun); else None."""
        words = self.shell_words(text)
        i = 0
        while i < len(words) and re.fullmatch(r"[A-Za-z_]\w*=.*", words[i]):
            i += 1
        if i < len(words) and os.path.basename(words[i]) == "dptrain":
            return words[i:]
        if i < len(words) and words[i] in LAUNCHERS:
            for j in range(i + 1, len(words)):
                if words[j] in SEPARATORS:
                    return None
                if os.path.basename(words[j]) == "dptrain":
                    return words[j:]
        return None

    def check_code_lines(self, path: Path, lines):
        pending, start = "", 0
        for number, text, in_code, language in lines:
            if not in_code or language is None or language in NOT_SHELL:
                continue
            stripped = text.strip()
            if stripped.startswith("$ "):
                stripped = stripped[2:]
            if not pending:
                start = number
            if stripped.endswith("\\"):
                pending += stripped[:-1] + " "
                continue
            whole = pending + stripped
            pending = ""
            words = self.command_words(whole)
            if words:
                self.check_command(path, start, words, whole)

    def check_inline(self, path: Path, number: int, text: str):
        for span in re.findall(r"`([^`]+)`", text):
            if span.startswith("dptrain "):
                words = span.split()
                if len(words) > 1 and not re.fullmatch(r"[a-z][a-z-]*|--?\S+", words[1]):
                    continue  # `dptrain 0.1.0`: not a command
                self.check_command(path, number, words, span)

    # ---------------------------------------------------------------- links
    def anchors_of(self, target: Path):
        if target not in self.anchor_cache:
            self.anchor_cache[target] = split_page(target)[1]
        return self.anchor_cache[target]

    def check_links(self, path: Path, number: int, text: str, own_anchors):
        prose = re.sub(r"`[^`]*`", "", text)
        for _, href in LINK.findall(prose):
            if re.match(r"^[a-z][a-z0-9+.-]*:", href):
                continue  # https:, mailto:
            self.links += 1
            file_part, _, anchor = href.partition("#")
            target = (path.parent / file_part).resolve() if file_part else path
            if file_part and not target.exists():
                self.problem(path, number, f"link to {href}: {file_part} does not exist")
                continue
            if anchor:
                if target.is_file() and target.suffix == ".md":
                    anchors = own_anchors if target == path else self.anchors_of(target)
                    if anchor not in anchors:
                        where = file_part or path.name
                        self.problem(path, number, f"link to {href}: no heading '#{anchor}' in {where}")
                else:
                    self.problem(path, number, f"link to {href}: an anchor into a file that is not Markdown")

    # ---------------------------------------------------------------- option tables
    def check_table(self, path: Path, number: int, spec: str, rows):
        self.tables += 1
        commands = []
        for name in (s.strip() for s in spec.split(",")):
            words = name.split()
            if not words or words[0] != "dptrain":
                self.problem(path, number, f"options comment names '{name}', not a 'dptrain ...' command")
                continue
            command = tuple(words[1:])
            info = self.cli.help(command)
            if info is None or info["subcommands"]:
                self.problem(path, number, f"options comment: '{name}' is not a dptrain command without subcommands")
                continue
            commands.append((command, info))
        if not rows:
            self.problem(path, number, f"options comment for {spec} is not followed by a table")
            return
        for row_number, row in rows:
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            if not cells or re.fullmatch(r":?-+:?", cells[0] or "-"):
                continue
            named = OPTION.findall(cells[0])
            if not named:
                continue  # the header
            for command, info in commands:
                documented = self.documented.setdefault(command, set())
                for option in named:
                    if option not in info["options"]:
                        self.problem(path, row_number,
                                     f"option table of 'dptrain {' '.join(command)}' names {option}, "
                                     f"which its --help does not print")
                    documented.add(option)
        for command, _ in commands:
            self.table_seen.add(command)
            self.documented.setdefault(command, set())

    def check_tables(self, path: Path, lines):
        for index, (number, text, in_code, _) in enumerate(lines):
            m = None if in_code else TABLE_MARKER.match(text)
            if not m:
                continue
            rows, j = [], index + 1
            while j < len(lines) and not lines[j][1].strip():
                j += 1
            while j < len(lines) and lines[j][1].lstrip().startswith("|"):
                rows.append((lines[j][0], lines[j][1]))
                j += 1
            self.check_table(path, number, m.group(1), rows)

    def check_coverage(self):
        for command in self.cli.leaves():
            name = "dptrain " + " ".join(command)
            if command not in self.table_seen:
                self.problems.append(f"no option table for '{name}' (a '<!-- options: {name} -->' table in docs/)")
                continue
            info = self.cli.help(command)
            for group in info["groups"]:
                if set(group) & {"--help", "--version"}:
                    continue
                if not set(group) & self.documented[command]:
                    self.problems.append(
                        f"the option tables of '{name}' do not name {group[0]}, which its --help prints")

    # ---------------------------------------------------------------- all
    def run(self):
        checked = pages(self.root)
        for path in checked:
            lines, anchors = split_page(path)
            self.anchor_cache[path.resolve()] = anchors
            self.check_code_lines(path, lines)
            for number, text, in_code, _ in lines:
                if not in_code:
                    self.check_inline(path, number, text)
                    self.check_links(path, number, text, anchors)
            self.check_tables(path, lines)
        self.check_coverage()
        return checked


def check(dptrain: str, root: Path) -> int:
    checker = Checker(root.resolve(), Cli(dptrain))
    checked = checker.run()
    for p in checker.problems:
        print(p)
    summary = (f"{len(checked)} pages, {checker.commands} dptrain command lines, {checker.links} links, "
               f"{checker.tables} option tables")
    if checker.problems:
        print(f"FAIL: {len(checker.problems)} problems ({summary})")
        return 1
    print(f"PASS: {summary}")
    return 0


# -------------------------------------------------------------------- self-test
def mirror(source: Path, into: Path):
    """A tree where README.md and docs/ are copies (to break) and everything else links to the source."""
    for entry in source.iterdir():
        if entry.name in {"README.md", "docs", ".git", "build"}:
            continue
        (into / entry.name).symlink_to(entry)
    shutil.copy(source / "README.md", into / "README.md")
    shutil.copytree(source / "docs", into / "docs")


def edit_first(path: Path, pattern: str, change):
    """Applies change(line) to the first line matching pattern; the page must have one."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for i, line in enumerate(lines):
        if re.search(pattern, line):
            lines[i] = change(line)
            path.write_text("".join(lines), encoding="utf-8")
            return
    raise AssertionError(f"{path}: no line matches {pattern!r}")


def self_test(dptrain: str, source: Path) -> int:
    script = Path(__file__).resolve()
    bogus = "--no-such-option"
    cases = [
        ("a bogus option on a command line of a docs page", "docs/training.md", r"^dptrain train --model",
         lambda line: line.replace(" --model", f" {bogus} --model", 1),
         [bogus, "docs/training.md"]),
        ("a bogus option on a command line of the README", "README.md", r"^dptrain data convert fashion-mnist",
         lambda line: line.rstrip("\n") + f" {bogus}\n", [bogus, "README.md"]),
        ("a bogus option behind mpiexec", "README.md", r"^mpiexec -n 4 dptrain train",
         lambda line: line.rstrip("\n") + f" {bogus}\n", [bogus]),
        ("a bogus option in an inline command", "docs/checkpoints.md", r"^A checkpoint directory holds",
         lambda line: f"Run `dptrain inspect {bogus}` to see it. " + line, [bogus, "dptrain inspect"]),
        ("a subcommand that does not exist", "docs/datasets.md", r"^dptrain data verify ",
         lambda line: line.replace("data verify", "data verfiy"), ["verfiy", "no such subcommand"]),
        ("a bogus row in an option table", "docs/training.md", r"^\| `--seed S` \|",
         lambda line: line + f"| `{bogus}` | nothing |\n", [bogus, "which its --help does not print"]),
        ("a row missing from an option table", "docs/training.md", r"^\| `--seed S` \|",
         lambda line: "", ["do not name --seed"]),
        ("an option table without its comment", "docs/weights.md", r"^<!-- options: dptrain import -->",
         lambda line: "", ["no option table for 'dptrain import'"]),
        ("a link to a page that does not exist", "README.md", r"^\| \[Installing\]",
         lambda line: line.replace("docs/installing.md", "docs/instaling.md"), ["docs/instaling.md does not exist"]),
        ("a link to a heading that does not exist", "docs/cluster.md", r"^## The Slurm scripts",
         lambda line: "See [the nowhere section](training.md#no-such-heading).\n" + line, ["#no-such-heading"]),
    ]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        clean = tmp / "clean"
        clean.mkdir()
        mirror(source, clean)
        result = subprocess.run([sys.executable, str(script), dptrain, str(clean)], capture_output=True, text=True)
        if result.returncode != 0:
            print("FAIL: the unbroken copy of the pages does not pass, so nothing below would tell:")
            print(result.stdout + result.stderr)
            return 1
        print("ok: the unbroken copy passes")
        for n, (what, page, pattern, change, expected) in enumerate(cases):
            root = tmp / f"case{n}"
            root.mkdir()
            mirror(source, root)
            edit_first(root / page, pattern, change)
            result = subprocess.run([sys.executable, str(script), dptrain, str(root)], capture_output=True, text=True)
            output = result.stdout + result.stderr
            missing = [e for e in expected if e not in output]
            if result.returncode == 1 and not missing:
                print(f"ok: {what} is caught: {output.splitlines()[0]}")
            else:
                failures += 1
                print(f"FAIL: {what} ({page}) is not caught as expected (exit {result.returncode}, "
                      f"missing {missing}):\n{output}")
    print("PASS: every broken copy fails" if failures == 0 else f"FAIL: {failures} broken copies were not caught")
    return 1 if failures else 0


def main(argv):
    args = list(argv)
    selftest = "--self-test" in args
    if selftest:
        args.remove("--self-test")
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    dptrain, source = args[0], Path(args[1])
    if not os.access(dptrain, os.X_OK):
        print(f"FAIL: {dptrain} is not an executable", file=sys.stderr)
        return 2
    return self_test(dptrain, source.resolve()) if selftest else check(dptrain, source)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
