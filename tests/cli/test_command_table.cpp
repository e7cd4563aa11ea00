// The command table (app/cli/command_table.h) is the CLI's one list of commands. The
// help it drives lists every command, `kiln COMMAND --help` prints the command's own
// usage, and README.md's "Command line" section says the same: its command table has
// the table's rows (name and summary, in order), and every command its reference
// table shows is one kiln has, and the other way round.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command_table.h"

namespace kiln::cli {
namespace {

struct Row {
  std::string name, summary;
  bool operator==(const Row&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Row& row) {
  return out << "| `" << row.name << "` | " << row.summary << " |";
}

std::vector<Row> tableRows() {
  std::vector<Row> rows;
  for (const Command& command : commandTable())
    rows.push_back({std::string(command.name), std::string(command.summary)});
  return rows;
}

// README.md's "## Command line" section, up to the next section.
std::vector<std::string> readmeCommandLineSection() {
  std::ifstream in(KILN_README_PATH);
  EXPECT_TRUE(in) << "cannot read " << KILN_README_PATH;
  std::vector<std::string> lines;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## Command line";
    if (inside) lines.push_back(line);
  }
  EXPECT_FALSE(lines.empty()) << "README.md has no '## Command line' section";
  return lines;
}

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(' ');
  return first == std::string::npos ? ""
                                    : text.substr(first, text.find_last_not_of(' ') + 1 - first);
}

// The cells of a Markdown table row; "\|" inside a cell is a literal bar.
std::vector<std::string> cellsOf(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(trimmed(cell));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

// The rows under the table header `header` in `lines` (the separator line skipped).
std::vector<std::vector<std::string>> tableUnder(const std::vector<std::string>& lines,
                                                 const std::string& header) {
  std::vector<std::vector<std::string>> rows;
  size_t i = 0;
  while (i < lines.size() && lines[i] != header) ++i;
  EXPECT_LT(i, lines.size()) << "README.md's command line section has no table '" << header << "'";
  for (i += 2; i < lines.size() && lines[i].rfind("|", 0) == 0; ++i)
    rows.push_back(cellsOf(lines[i]));
  return rows;
}

// The command a reference row's `kiln ...` example runs: the first word after the
// global options and their values ("--remote HOST build|run" -> "build"), or an alias
// ("--version"); "" for `kiln --plugins LIB.so <command>`.
std::string commandOfExample(const std::string& example) {
  std::istringstream words(example);
  std::string word;
  words >> word;  // kiln
  while (words >> word) {
    if (word == "--plugins" || word == "--trust" || word == "--remote") {
      words >> word;  // the option's value
      continue;
    }
    std::smatch name;
    if (std::regex_search(word, name, std::regex("^(--)?[a-z][a-z0-9-]*"))) return name.str();
    return "";
  }
  return "";
}

TEST(CommandTable, NamesAndAliasesAreUnique) {
  std::set<std::string_view> words;
  for (const Command& command : commandTable()) {
    EXPECT_TRUE(words.insert(command.name).second) << command.name;
    for (std::string_view alias : command.aliases) EXPECT_TRUE(words.insert(alias).second) << alias;
    EXPECT_NE(command.run, nullptr) << command.name;
  }
}

TEST(CommandTable, SummariesAreOneShortLine) {
  for (const Command& command : commandTable()) {
    EXPECT_FALSE(command.summary.empty()) << command.name;
    EXPECT_LE(command.summary.size(), 80u) << command.name << ": " << command.summary;
    EXPECT_EQ(command.summary.find('\n'), std::string_view::npos) << command.name;
  }
}

TEST(CommandTable, UsageNamesItsCommand) {
  for (const Command& command : commandTable()) {
    const std::string usage(command.usage);
    EXPECT_EQ(usage.rfind("usage: kiln ", 0), 0u) << command.name << ":\n" << usage;
    auto mentions = [&usage](std::string_view word) {
      std::string needle(1, ' ');
      needle.append(word);
      return usage.find(needle) != std::string::npos;
    };
    bool named = mentions(command.name);
    for (std::string_view alias : command.aliases) named = named || mentions(alias);
    EXPECT_TRUE(named) << command.name << ":\n" << usage;
    EXPECT_EQ(usage.back(), '\n') << command.name;
  }
}

TEST(CommandTable, FindsNamesAndAliases) {
  ASSERT_NE(findCommand("build"), nullptr);
  EXPECT_EQ(findCommand("build")->name, "build");
  ASSERT_NE(findCommand("--version"), nullptr);
  EXPECT_EQ(findCommand("--version")->name, "version");
  ASSERT_NE(findCommand("-h"), nullptr);
  EXPECT_EQ(findCommand("-h")->name, "help");
  EXPECT_EQ(findCommand("bulid"), nullptr);
  EXPECT_EQ(findCommand(""), nullptr);
}

// packaging/man/kiln_help_docs.py reads the commands from this block: "  NAME  SUMMARY"
// lines after "commands:", up to a blank line.
TEST(MainHelp, ListsEveryCommandWithItsSummary) {
  std::istringstream text(mainHelpText());
  std::vector<Row> listed;
  std::string line;
  while (std::getline(text, line) && line != "commands:") {
  }
  while (std::getline(text, line) && !line.empty()) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, std::regex("  ([a-z][a-z0-9-]*) +(.+)"))) << line;
    listed.push_back({m[1], m[2]});
  }
  EXPECT_EQ(listed, tableRows());
}

TEST(Dispatch, HelpPrintsTheTablesUsage) {
  for (const Command& command : commandTable()) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"--help"}, std::vector<std::string>{"x.onnx", "--help"}}) {
      testing::internal::CaptureStdout();
      const int rc = dispatchCommand(std::string(command.name), args);
      EXPECT_EQ(testing::internal::GetCapturedStdout(), command.usage) << command.name;
      EXPECT_EQ(rc, 0) << command.name;
    }
    testing::internal::CaptureStdout();
    const int rc = dispatchCommand("help", {std::string(command.name)});
    EXPECT_EQ(testing::internal::GetCapturedStdout(), command.usage) << "help " << command.name;
    EXPECT_EQ(rc, 0) << command.name;
  }
}

TEST(Dispatch, HelpAloneIsTheMainHelp) {
  for (const char* word : {"help", "--help", "-h"}) {
    testing::internal::CaptureStdout();
    EXPECT_EQ(dispatchCommand(word, {}), 0) << word;
    EXPECT_EQ(testing::internal::GetCapturedStdout(), mainHelpText()) << word;
  }
}

TEST(Dispatch, UnknownCommandIsAUsageError) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(dispatchCommand("bulid", {"m.onnx"}), 2);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("unknown command 'bulid'"),
            std::string::npos);
  testing::internal::CaptureStderr();
  EXPECT_EQ(dispatchCommand("help", {"bulid"}), 2);
  testing::internal::GetCapturedStderr();
}

TEST(Readme, CommandTableIsTheCommandTable) {
  std::vector<Row> readme;
  for (const auto& cells : tableUnder(readmeCommandLineSection(), "| command | summary |")) {
    ASSERT_EQ(cells.size(), 2u);
    ASSERT_GE(cells[0].size(), 2u);
    readme.push_back({cells[0].substr(1, cells[0].size() - 2), cells[1]});
  }
  std::ostringstream expected;
  for (const Row& row : tableRows()) expected << row << "\n";
  EXPECT_EQ(readme, tableRows()) << "README.md's command table should read:\n" << expected.str();
}

TEST(Readme, ReferenceShowsEveryCommandAndNoOther) {
  std::set<std::string> shown;
  const std::regex code("`(kiln [^`]*)`");
  for (const auto& cells : tableUnder(readmeCommandLineSection(), "| command | what it does |")) {
    ASSERT_FALSE(cells.empty());
    for (std::sregex_iterator it(cells[0].begin(), cells[0].end(), code), end; it != end; ++it) {
      const std::string word = commandOfExample((*it)[1]);
      if (word.empty()) continue;
      const Command* command = findCommand(word);
      EXPECT_NE(command, nullptr) << "README.md shows `" << (*it)[1] << "`: kiln has no '" << word
                                  << "'";
      if (command) shown.insert(std::string(command->name));
    }
  }
  for (const Command& command : commandTable())
    EXPECT_TRUE(shown.count(std::string(command.name)))
        << "README.md's command reference has no row for `kiln " << command.name << "`";
}

}  // namespace
}  // namespace kiln::cli
