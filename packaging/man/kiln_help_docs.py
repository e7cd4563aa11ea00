#!/usr/bin/env python3
"""Writes kiln(1) and kiln's bash completion from the built CLI's own help.

`kiln --help` lists the commands; `kiln COMMAND --help` is each command's page. The man
page quotes them, and the completion takes the command names, each command's options
and the values of `--option a|b|c` choices from the same text, so both follow the CLI
when a command or option changes. The build runs this after linking kiln
(cmake/KilnPackaging.cmake):

  kiln_help_docs.py KILN --version V --man OUT/kiln.1 \
      --completion-template kiln.bash.in --completion OUT/kiln
"""

import argparse
import datetime
import os
import re
import subprocess
import sys

DESCRIPTION = (
    "kiln turns an ONNX model into an inference engine for an NVIDIA GPU (or the CPU "
    "reference backend) and shows every decision it made: which nodes fused into which "
    "layer, the precision of each layer and why, which tactic won and by how much, "
    "where the time and the memory go. It builds plans (.kiln files), runs and "
    "benchmarks them as trtexec does, inspects models, plans and trtexec exports, "
    "compares builds and their accuracy, calibrates INT8 and runs the ONNX backend "
    "conformance tests. kiln-studio(1) is the same engine in a desktop application."
)

OPTION = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*|-o)(?![\w-])")
# `--backend cpu|cuda`, `--precision-a/--precision-b fp32|fp16|bf16`
CHOICE = re.compile(r"((?:--[a-z0-9-]+/)*--[a-z0-9-]+) ([a-z0-9_]+(?:\|[a-z0-9_]+)+)\b")


def run_help(kiln, args):
    done = subprocess.run([kiln, *args], capture_output=True, text=True, timeout=60)
    text = (done.stdout + done.stderr).rstrip("\n")
    if done.returncode != 0 or not text:
        sys.exit(f"kiln_help_docs: `kiln {' '.join(args)}` failed (exit {done.returncode}): {text}")
    return text


def parse_main_help(text):
    """Returns (command names in order, the commands block, the global option lines)."""
    lines = text.splitlines()
    try:
        start = lines.index("commands:") + 1
    except ValueError:
        sys.exit("kiln_help_docs: `kiln --help` has no 'commands:' section")
    block, commands = [], []
    for line in lines[start:]:
        if not line.startswith(" ") and line.strip():
            break
        block.append(line)
        match = re.match(r"^  ([a-z][a-z0-9-]*)\b", line)
        if match and match.group(1) not in commands:
            commands.append(match.group(1))
    # `global option:` lines and their indented continuations, up to the closing hint
    globals_ = []
    for line in lines:
        if line.startswith("global option:") or (globals_ and line.startswith(" ")):
            globals_.append(line)
        elif globals_:
            break
    if not commands:
        sys.exit("kiln_help_docs: no commands found in `kiln --help`")
    return commands, block, globals_


def troff_escape(line):
    line = line.replace("\\", "\\e").replace("-", "\\-")
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def verbatim(lines):
    return [".RS 4", ".nf"] + [troff_escape(line) for line in lines] + [".fi", ".RE"]


def man_page(version, main_help, commands, helps):
    _, block, globals_ = parse_main_help(main_help)
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch \
        else datetime.datetime.now(datetime.timezone.utc)
    out = [
        '.\\" Generated from `kiln --help` and `kiln COMMAND --help` by',
        '.\\" packaging/man/kiln_help_docs.py at build time: edit the CLI\'s help, not this.',
        f'.TH KILN 1 "{when:%Y-%m-%d}" "kiln {version}" "User Commands"',
        ".SH NAME",
        "kiln \\- build, inspect, run and compare inference engines from ONNX models",
        ".SH SYNOPSIS",
        ".B kiln",
        "[\\fB\\-\\-plugins\\fR \\fILIB.so\\fR[,...]] [\\fB\\-\\-trust\\fR \\fIKEY.pub\\fR[,...]]",
        "\\fICOMMAND\\fR [\\fIoptions\\fR]",
        ".br",
        ".B kiln \\-\\-version",
        ".br",
        ".B kiln",
        "\\fICOMMAND\\fR \\fB\\-\\-help\\fR",
        ".SH DESCRIPTION",
        troff_escape(DESCRIPTION),
        ".PP",
        "The commands, as \\fBkiln \\-\\-help\\fR lists them:",
        ".PP",
    ]
    out += verbatim(block)
    out += [".SH COMMANDS"]
    for command in commands:
        out += [f".SS {command}"] + verbatim(helps[command].splitlines())
    out += [".SH GLOBAL OPTIONS", "These come before the command and work with every command."]
    out += [".PP"] + verbatim(globals_)
    out += [
        ".TP", ".B \\-\\-version",
        "The release, the git commit, the CUDA, cuDNN and cuBLASLt versions kiln was built",
        "against and what is found at run time (GPU, driver, libraries, or why no GPU is usable).",
        ".SH EXIT STATUS",
        "0 on success, 1 on an error, 2 on a usage error; \\fBcompare\\fR and \\fBdebug\\fR",
        "return 3 when outputs miss the tolerance (see their sections).",
        ".SH FILES",
        ".TP", ".I /usr/share/doc/kiln/",
        "README.md (quick start, every command by example) and packaging.md.",
        ".SH SEE ALSO",
        ".BR kiln\\-studio (1),",
        ".BR trtexec (1)",
        ".PP",
        "The plugin API: /usr/include/kiln/plugin.h (package libkiln\\-dev).",
        "",
    ]
    return "\n".join(out)


def options_of(text):
    found = []
    # `kiln other-command --option` in a help text is an example of another command
    for option in OPTION.findall(re.sub(r"`[^`]*`", "", text)):
        if option not in found:
            found.append(option)
    return found + (["--help"] if "--help" not in found else [])


def choices_of(texts):
    choices = {}
    for text in texts:
        for names, values in CHOICE.findall(text):
            for name in names.split("/"):
                choices.setdefault(name, values.replace("|", " "))
    return choices


def completion(template, main_help, commands, helps):
    per_command = []
    for command in commands:
        text = helps[command]
        if "build options" in text and command != "build":
            text += "\n" + helps.get("build", "")  # `kiln debug` takes kiln build's options
        opts = " ".join(options_of(text))
        per_command.append(f'        {command}) opts="{opts}" ;;')
    values = [f'        {name}) COMPREPLY=($(compgen -W "{words}" -- "$cur")); return ;;'
              for name, words in sorted(choices_of([main_help, *helps.values()]).items())]
    subcommands = []
    for command in commands:
        subs = re.findall(rf"kiln {command} ([a-z]+) ", helps[command])
        subs = [s for s in dict.fromkeys(subs)]
        if len(subs) > 1:
            subcommands.append(f'        {command}) subs="{" ".join(subs)}" ;;')
    text = template.replace("@KILN_COMMANDS@", " ".join(commands))
    text = text.replace("@KILN_COMMAND_OPTIONS@", "\n".join(per_command))
    text = text.replace("@KILN_OPTION_VALUES@", "\n".join(values))
    text = text.replace("@KILN_SUBCOMMANDS@", "\n".join(subcommands))
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kiln")
    parser.add_argument("--version", required=True)
    parser.add_argument("--man", required=True)
    parser.add_argument("--completion-template", required=True)
    parser.add_argument("--completion", required=True)
    args = parser.parse_args()

    main_help = run_help(args.kiln, ["--help"])
    commands, _, _ = parse_main_help(main_help)
    helps = {command: run_help(args.kiln, [command, "--help"]) for command in commands}
    with open(args.man, "w", encoding="utf-8") as out:
        out.write(man_page(args.version, main_help, commands, helps))
    with open(args.completion_template, encoding="utf-8") as template:
        text = completion(template.read(), main_help, commands, helps)
    with open(args.completion, "w", encoding="utf-8") as out:
        out.write(text)


if __name__ == "__main__":
    main()
