#include "commandsupport.h"

#include "exitcodes.h"

#include <task/taskcatalog.h>

namespace ks::cli {

std::optional<int> parseSubcommand(QCommandLineParser& parser, const QStringList& arguments, const QString& command,
    QTextStream& out, QTextStream& err)
{
    if (!parser.parse(arguments)) {
        err << command << ": " << parser.errorText() << "\n";
        return exitcode::InvalidInput;
    }
    if (parser.isSet(QStringLiteral("help"))) {
        out << parser.helpText();
        return exitcode::Success;
    }
    return std::nullopt;
}

std::optional<Task> loadNamedTask(const QString& nameOrPath, QTextStream& err)
{
    std::string error;
    const auto dir = resolveTask(nameOrPath.toStdString(), error);
    if (!dir) {
        err << "ksearch: " << QString::fromStdString(error) << "\n";
        return std::nullopt;
    }
    auto result = loadTask(*dir);
    for (const auto& issue : result.diagnostics.issues())
        err << QString::fromStdString(issue.format()) << "\n";
    if (!result.task)
        err << "ksearch: " << QString::fromStdString(dir->string()) << ": the task is invalid ("
            << result.diagnostics.errors().size() << " error(s))\n";
    return std::move(result.task);
}

} // namespace ks::cli
