#pragma once

#include "llmoptions.h"
#include "runflags.h"

#include <session/sessionconfig.h>

#include <QCommandLineParser>
#include <QString>

#include <optional>

namespace ks::cli {

// `ksearch run --resume` accepts the command line that started the session, as people re-run it
// from their shell history: every flag that states a setting of the session must agree with
// session.json. The first that does not, as a usage message naming the flag and both values;
// nullopt when all agree or none is given. --budget and --k are not checked: on resume they are
// changes, recorded as the person's commands.
std::optional<QString> resumeConflict(const QCommandLineParser& parser, const RunFlags& f, const LlmOptions& planner,
    const LlmOptions& coder, const SessionConfig& session);

} // namespace ks::cli
