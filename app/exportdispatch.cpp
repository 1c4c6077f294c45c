// `ksearch export --dispatch`: gpu/dispatchexport does the work; this says what it did.

#include "exportdispatch.h"

#include <util/numberformat.h>
#include <util/qtext.h>

#include <dispatchexport.h>

namespace ks::cli {

int exportDispatch(const Session& session, const SearchState& state, const Task& task,
    const std::filesystem::path& outDir, const DispatchOptions& options, QTextStream& out, QTextStream& err)
{
    const DispatchExportResult r =
        exportDispatchingKernel(session, state, task, outDir, options.benchSeconds, options.python, options.confine);
    if (r.bestAttempt >= 0) {
        out << "best single kernel: " << QString::fromStdString(r.bestNode) << " attempt " << r.bestAttempt << ", J "
            << q(formatScore(r.singleScore)) << " now (" << q(formatScore(r.sessionScore)) << " in the session)\n";
        out << "dispatching kernel: " << r.variants << " variants, " << r.routedShapes << " shapes routed, "
            << QString::fromStdString(r.verdict) << ", J " << q(formatScore(r.dispatchedScore)) << "\n";
    }
    if (r.outcome != DispatchExportResult::Outcome::Written) {
        err << "ksearch export --dispatch: " << QString::fromStdString(r.error) << (r.log.empty() ? "" : ":") << "\n"
            << QString::fromStdString(r.log);
        return r.outcome == DispatchExportResult::Outcome::NoBackend ? 3 : 1;
    }
    for (const auto& f : r.files)
        out << QString::fromStdString(f.string()) << "\n";
    return 0;
}

} // namespace ks::cli
