#pragma once

#include <QStringList>

namespace ks::cli {

struct GlobalOptions {
    bool verbose = false;
    QString logFile;
};

// Splits "ksearch [global options] <command> [args]" and runs the command.
int dispatch(const QStringList& arguments);

// True when these arguments start the desktop window (no command, or "gui").
bool wantsGui(const QStringList& arguments);

// Subcommands; each gets its own arguments (argv[0] is "ksearch <command>").
int runTasksCommand(const QStringList& arguments, const GlobalOptions& global);
int runGui(const QStringList& arguments, const GlobalOptions& global);
int runEvalCommand(const QStringList& arguments, const GlobalOptions& global);
int runLlmCommand(const QStringList& arguments, const GlobalOptions& global);
int runRunCommand(const QStringList& arguments, const GlobalOptions& global);
int runExportCommand(const QStringList& arguments, const GlobalOptions& global);
int runWorkerCommand(const QStringList& arguments, const GlobalOptions& global);

QString usageText();

} // namespace ks::cli
