"""Checks docs/man/asyncwatch.1 against `asyncwatch [SUBCOMMAND] --help` (test package.man-page).

Every option a subcommand's --help prints must be described in the man page section of that
subcommand (run and report also draw on REPORT OPTIONS, every subcommand on GENERAL OPTIONS), every
subcommand must have its section, and every long option the man page names must exist.
"""
import re
import subprocess
import sys

SECTIONS = {"": ["GENERAL OPTIONS"], "run": ["run", "REPORT OPTIONS"], "report": ["report", "REPORT OPTIONS"],
            "timeline": ["timeline"], "dump": ["dump"], "export": ["export"], "version": ["version"]}


def help_text(exe, sub):
    cmd = [exe] + ([sub] if sub else []) + ["--help"]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def options(help_out):
    """The option names of a CLI11 help text: '  -o,--output TEXT  ...' gives -o and --output."""
    names = set()
    for line in help_out.splitlines():
        m = re.match(r"^  (-[^\s]+)", line)
        if m:
            names.update(n for n in m.group(1).split(",") if n.startswith("-"))
    return names


def subcommands(help_out):
    text = help_out.split("Subcommands:", 1)[1] if "Subcommands:" in help_out else ""
    return [m.group(1) for m in re.finditer(r"^  ([a-z]+)\s", text, re.M)]


def man_sections(path):
    """Section title (.SH or .SS) -> its text, with roff escapes removed."""
    sections, title = {}, ""
    for raw in open(path, encoding="utf-8"):
        line = re.sub(r"\\f[BIRP]", "", raw.rstrip("\n")).replace("\\-", "-")
        if line.startswith(".\\\""):
            continue
        m = re.match(r'^\.(SH|SS) "?([^"]*)"?$', line)
        if m:
            title = m.group(2).strip()
            sections.setdefault(title, "")
            continue
        sections[title] = sections.get(title, "") + line + "\n"
    return sections


def mentions(text, option):
    return re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", text) is not None


def main():
    exe, man = sys.argv[1], sys.argv[2]
    sections = man_sections(man)
    problems, known = [], set()
    top = help_text(exe, "")
    for sub in subcommands(top):
        if sub not in SECTIONS:
            problems.append(f"subcommand {sub} is new: add its man page section and an entry in SECTIONS here")
    for sub, where in SECTIONS.items():
        if sub and sub not in subcommands(top):
            problems.append(f"the man page's section {sub} describes a subcommand that --help does not list")
            continue
        opts = options(help_text(exe, sub))
        known |= opts
        text = "".join(sections.get(s, "") for s in where + ["GENERAL OPTIONS"])
        if sub and sub not in sections:
            problems.append(f"no section '.SS {sub}' in {man}")
        for opt in sorted(opts):
            if not mentions(text, opt):
                problems.append(f"asyncwatch {sub or ''} --help lists {opt}, the man page's section(s) {', '.join(where)} do not")
    whole = "".join(sections.values())
    for opt in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", whole))):
        if opt not in known:
            problems.append(f"the man page names {opt}, which no --help lists")
    for p in problems:
        print("man page check:", p)
    print(f"man page check: {len(known)} options, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
