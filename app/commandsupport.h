#pragma once

#include <task/task.h>

#include <QCommandLineParser>
#include <QString>
#include <QStringList>
#include <QTextStream>

#include <optional>

namespace ks::cli {

// Parses a subcommand's arguments. Returns the exit code when the command is already over
// (a usage error: 2, --help printed: 0), nullopt when it should go on.
std::optional<int> parseSubcommand(QCommandLineParser& parser, const QStringList& arguments, const QString& command,
    QTextStream& out, QTextStream& err);

// Loads a task named on the command line (a name on the search path or a folder), printing every
// issue with its file and field; nullopt means the caller exits 2.
std::optional<Task> loadNamedTask(const QString& nameOrPath, QTextStream& err);

} // namespace ks::cli
