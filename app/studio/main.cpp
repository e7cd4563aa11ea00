// kiln-studio: the desktop application.
//   kiln-studio [FILE] [--build [--shapes name:1x3x224x224,...]] [--profile] [--screenshots DIR]
//   [--report FILE.html] [--trust KEY.pub[,KEY.pub]]
// FILE is an ONNX model, a .kiln plan or a trtexec --exportLayerInfo JSON. --build
// builds the model with the Build panel's settings once it is open, --profile then
// times the engine, --screenshots saves a PNG of each view, --report writes the HTML
// report; with either of those it quits when done (exit 1 when a step failed; the
// reason is printed). --trust requires plans signed by those keys for this session,
// as kiln's --trust does, instead of the keys saved in Tools > Plan Trust; it is
// applied before any file opens, and a key that does not load ends the studio.
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>
#include <cstdio>

#include "auto_run.h"
#include "kiln/status.h"
#include "main_window.h"
#include "plan_trust.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("kiln-studio");
  QApplication::setOrganizationName("Kiln");
  QCommandLineParser parser;
  parser.setApplicationDescription("Kiln Studio: build, inspect and profile inference engines.");
  parser.addHelpOption();
  parser.addPositionalArgument("file", "ONNX model, .kiln plan or trtexec graph JSON to open");
  QCommandLineOption build("build", "Build the opened model with the Build panel's settings.");
  QCommandLineOption shapes("shapes", "Shapes of dynamic inputs for --build (min = opt = max).",
                            "name:1x3x224x224,...");
  QCommandLineOption profile("profile", "Profile the engine once it is built or opened.");
  QCommandLineOption shots("screenshots", "Save a PNG of each view into DIR, then quit.", "DIR");
  QCommandLineOption report("report", "Write the HTML report of the engine to FILE, then quit.",
                            "FILE");
  QCommandLineOption trust("trust",
                           "Load only plans signed by these Ed25519 public keys (this session; "
                           "overrides Tools > Plan Trust).",
                           "KEY.pub[,KEY.pub]");
  parser.addOptions({build, shapes, profile, shots, report, trust});
  parser.process(app);

  kiln::studio::MainWindow window;  // applies the saved trusted keys
  if (parser.isSet(trust)) {
    const QStringList keys = kiln::studio::splitTrustOption(parser.values(trust).join(','));
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
  options.build = parser.isSet(build);
  options.profile = parser.isSet(profile);
  options.shapes = parser.value(shapes);
  options.screenshotDir = parser.value(shots);
  options.reportPath = parser.value(report);
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
