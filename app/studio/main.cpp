// kiln-studio: the desktop application.
//   kiln-studio [FILE] [--build [--shapes name:1x3x224x224,...]] [--profile] [--screenshots DIR]
//   [--report FILE.html] [--trust KEY.pub[,KEY.pub]]
//   kiln-studio --help | --version
// FILE is an ONNX model, a .kiln plan or a trtexec --exportLayerInfo JSON. --build
// builds the model with the Build panel's settings once it is open, --profile then
// times the engine, --screenshots saves a PNG of each view, --report writes the HTML
// report; with either of those it quits when done (exit 1 when a step failed; the
// reason is printed). --trust requires plans signed by those keys for this session,
// as kiln's --trust does, instead of the keys saved in Tools > Plan Trust; it is
// applied before any file opens, and a key that does not load ends the studio.
// --help prints the options and --version "kiln-studio VERSION", both to stdout with
// exit 0 and without a display; an option the studio does not know is one line on
// stderr and exit 2. Qt's own options (-platform, -style, ...) still reach Qt.
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>
#include <cstdio>
#include <optional>

#include "auto_run.h"
#include "kiln/status.h"
#include "kiln/version.h"
#include "main_window.h"
#include "plan_trust.h"
#include "version_report.h"

namespace {

// The studio's command line, declared once for the early parse (before any display)
// and the parse of what QApplication leaves.
struct StudioCommandLine {
  QCommandLineParser parser;
  QCommandLineOption help = parser.addHelpOption();
  QCommandLineOption version{{"v", "version"}, "Print the version of kiln-studio and exit."};
  QCommandLineOption build{"build", "Build the opened model with the Build panel's settings."};
  QCommandLineOption shapes{"shapes", "Shapes of dynamic inputs for --build (min = opt = max).",
                            "name:1x3x224x224,..."};
  QCommandLineOption profile{"profile", "Profile the engine once it is built or opened."};
  QCommandLineOption shots{"screenshots", "Save a PNG of each view into DIR, then quit.", "DIR"};
  QCommandLineOption report{"report", "Write the HTML report of the engine to FILE, then quit.",
                            "FILE"};
  QCommandLineOption trust{"trust",
                           "Load only plans signed by these Ed25519 public keys (this session; "
                           "overrides Tools > Plan Trust).",
                           "KEY.pub[,KEY.pub]"};

  StudioCommandLine() {
    parser.setApplicationDescription("Kiln Studio: build, inspect and profile inference engines.");
    // "-platform offscreen" must read as one unknown word, not as -p -l -a ...
    parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
    parser.addPositionalArgument("file", "ONNX model, .kiln plan or trtexec graph JSON to open",
                                 "[FILE]");
    parser.addOptions({version, build, shapes, profile, shots, report, trust});
  }
};

// Options QGuiApplication and QApplication take out of argv themselves (their docs).
bool isQtOption(const QString& name) {
  static const QStringList kQtOptions = {"platform",
                                         "platformpluginpath",
                                         "platformtheme",
                                         "plugin",
                                         "qwindowgeometry",
                                         "geometry",
                                         "qwindowtitle",
                                         "title",
                                         "qwindowicon",
                                         "icon",
                                         "reverse",
                                         "session",
                                         "display",
                                         "name",
                                         "visual",
                                         "ncols",
                                         "cmap",
                                         "im",
                                         "dialogs",
                                         "qmljsdebugger",
                                         "style",
                                         "stylesheet",
                                         "widgetcount",
                                         "nograb",
                                         "dograb"};
  return kQtOptions.contains(name);
}

int usageError(QString what) {
  if (what.endsWith('.')) what.chop(1);  // QCommandLineParser's errorText ends in one
  std::fprintf(stderr, "kiln-studio: %s (kiln-studio --help lists the options)\n",
               kiln::escapeControlCharacters(what.toStdString()).c_str());
  return 2;
}

// --help, --version and unknown options, answered from argv before QApplication
// exists (it needs a display; they do not). The exit code, or nothing to go on.
std::optional<int> answerBeforeDisplay(StudioCommandLine& cli, int argc, char** argv) {
  QStringList arguments;
  for (int i = 0; i < argc; ++i) arguments << QString::fromLocal8Bit(argv[i]);
  cli.parser.parse(arguments);  // errors wait: a Qt option's value reads as a file here
  if (cli.parser.isSet(cli.help) || cli.parser.isSet("help-all")) {
    // Without a QCoreApplication, Qt writes "<executable_name>" for the program's name.
    const QString text = cli.parser.helpText().replace("<executable_name>", "kiln-studio");
    std::fputs(qPrintable(text), stdout);
    return 0;
  }
  if (cli.parser.isSet(cli.version)) {
    std::fputs(kiln::app::versionReport("kiln-studio").c_str(), stdout);
    return 0;
  }
  for (const QString& name : cli.parser.unknownOptionNames())
    if (!isQtOption(name))
      return usageError("unknown option '" + QString(name.size() > 1 ? "--" : "-") + name + "'");
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication::setApplicationName("kiln-studio");
  QApplication::setOrganizationName("Kiln");
  QApplication::setApplicationVersion(kiln::kKilnVersion);
  StudioCommandLine cli;
  if (const std::optional<int> code = answerBeforeDisplay(cli, argc, argv)) return *code;
  QApplication app(argc, argv);
  if (!cli.parser.parse(QApplication::arguments())) return usageError(cli.parser.errorText());
  const QCommandLineParser& parser = cli.parser;

  kiln::studio::MainWindow window;  // applies the saved trusted keys
  if (parser.isSet(cli.trust)) {
    const QStringList keys = kiln::studio::splitTrustOption(parser.values(cli.trust).join(','));
    const kiln::Status status = keys.isEmpty() ? kiln::invalidArgument("needs public key files")
                                               : window.setTrustedKeys(keys, /*save=*/false);
    if (!status.isOk()) {
      std::fprintf(stderr, "kiln-studio: --trust: %s\n",
                   kiln::escapeControlCharacters(status.message()).c_str());
      return 2;
    }
  }
  window.show();
  const QStringList files = parser.positionalArguments();
  if (files.isEmpty()) return app.exec();
  kiln::studio::AutoRunOptions options;
  options.file = files.front();
  options.build = parser.isSet(cli.build);
  options.profile = parser.isSet(cli.profile);
  options.shapes = parser.value(cli.shapes);
  options.screenshotDir = parser.value(cli.shots);
  options.reportPath = parser.value(cli.report);
  const bool quitWhenDone = !options.screenshotDir.isEmpty() || !options.reportPath.isEmpty();
  // A script asks nobody: a plan's recorded source model stays closed.
  if (quitWhenDone) window.setSourceModelPrompt(nullptr);
  kiln::studio::AutoRun script(&window, options);
  QObject::connect(&script, &kiln::studio::AutoRun::finished, &app,
                   [&](bool ok, const QString& message) {
                     const QString line =
                         message.isEmpty() ? (ok ? "done" : "failed (no reason given)") : message;
                     std::fprintf(ok ? stdout : stderr, "kiln-studio: %s\n",
                                  kiln::escapeControlCharacters(line.toStdString()).c_str());
                     if (quitWhenDone) app.exit(ok ? 0 : 1);
                   });
  QTimer::singleShot(0, &script, &kiln::studio::AutoRun::start);
  for (int i = 1; i < files.size(); ++i) window.openFile(files[i]);
  return app.exec();
}
