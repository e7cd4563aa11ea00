// The `kiln` command table: one row per command, the only list of them. It drives
// dispatch, `kiln --help`, `kiln help COMMAND` and `kiln COMMAND --help`; the man
// page and the bash completion are generated from that help
// (packaging/man/kiln_help_docs.py), and README.md's command table is checked
// against it (tests/cli/test_command_table.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::cli {

struct Command {
  std::string_view name;                  // the word after `kiln`: "build"
  std::vector<std::string_view> aliases;  // other words that run it: "--version"
  std::string_view summary;               // one line: `kiln --help` and README's command table
  std::string_view usage;  // `kiln NAME --help`: "usage: kiln ..." lines and the options
  // Runs the command on the arguments after its name; returns the exit code
  // (0 ok, 1 failure, 2 usage error; some commands add their own, stated in `usage`).
  int (*run)(const std::vector<std::string>& args);
};

// Every command, in the order `kiln --help` lists them.
const std::vector<Command>& commandTable();

// The command `word` names (its name or one of its aliases), or nullptr.
const Command* findCommand(std::string_view word);

// `kiln --help`: the synopsis, a "commands:" block with one line per command (name,
// summary) ended by a blank line, then the global options.
std::string mainHelpText();

// Runs `kiln WORD ARGS...`: the command's usage on stdout (exit 0) when ARGS holds
// --help, else the command itself; an unknown WORD is a usage error (exit 2).
int dispatchCommand(const std::string& word, const std::vector<std::string>& args);

}  // namespace kiln::cli
