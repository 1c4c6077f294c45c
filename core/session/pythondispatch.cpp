// The dispatching program of a session of Python candidates (PyTorch or Triton): dispatchkernel.h's
// plan as a Python module that loads each variant's source as a module of its own and routes each
// call by the shapes of its tensors.

#include "dispatchkernel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace ks {

namespace {

// `text` as a Python string literal (single-quoted; the source is UTF-8, as Python 3 reads it).
std::string pythonLiteral(const std::string& text)
{
    std::string out = "'";
    for (const char c : text) {
        switch (c) {
        case '\\':
            out += "\\\\";
            break;
        case '\'':
            out += "\\'";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
                out += escaped;
            } else {
                out += c;
            }
        }
    }
    return out + "'";
}

// Text for a "#" comment: one line, whatever the workload ids and axis names hold.
std::string commentText(const std::string& text)
{
    std::string out = text;
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = '?';
    return out;
}

bool isIdentifier(const std::string& s)
{
    static const std::set<std::string> keywords {"False", "None", "True", "and", "as", "assert", "async", "await",
        "break", "class", "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
        "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with",
        "yield"};
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || keywords.contains(s))
        return false;
    return std::all_of(
        s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

} // namespace

std::vector<PythonAxisSource> pythonAxisSources(const Definition& definition)
{
    std::vector<PythonAxisSource> sources;
    std::vector<const TensorSpec*> parameters;
    for (const auto& t : definition.inputs)
        parameters.push_back(&t);
    for (const auto& t : definition.outputs)
        parameters.push_back(&t);
    for (const Axis& axis : definition.axes) {
        if (axis.isConst)
            continue;
        for (std::size_t p = 0; p < parameters.size(); ++p) {
            const auto& shape = parameters[p]->shape;
            if (!shape)
                continue;
            const auto at = std::find(shape->begin(), shape->end(), axis.name);
            if (at != shape->end()) {
                sources.push_back({axis.name, static_cast<int>(p), static_cast<int>(at - shape->begin())});
                break;
            }
        }
    }
    return sources;
}

std::string pythonDispatchSource(const DispatchPlan& plan, const Definition& definition,
    const std::function<std::string(const std::string&)>& source)
{
    const std::vector<PythonAxisSource> axes = pythonAxisSources(definition);
    std::vector<std::string> names;
    for (const auto& list : {&definition.inputs, &definition.outputs})
        for (const TensorSpec& t : *list)
            names.push_back(isIdentifier(t.name) && t.name.rfind("_ks", 0) != 0
                    ? t.name
                    : "_ks_arg" + std::to_string(names.size()));
    std::ostringstream out;
    out << "\"\"\"A dispatching program made by `ksearch export --dispatch`: each call runs the attempt fastest\n"
           "on the nearest known shape (variant 0: the best single program). The variants' sources are\n"
           "kept below, each loaded as a module of its own (Triton reads a kernel's source back through\n"
           "linecache). The shape is read from the tensors' sizes; a variant that returns its outputs is\n"
           "called and its results copied into the outputs given.\"\"\"\n\n"
           "import inspect\nimport linecache\nimport math\nimport sys\nimport types\n\n"
           "_ks_N_INPUTS, _ks_N_OUTPUTS = "
        << definition.inputs.size() << ", " << definition.outputs.size() << "\n\n_ks_SOURCES = [\n";
    for (std::size_t i = 0; i < plan.variants.size(); ++i)
        out << "    # variant " << i << ": attempt " << plan.variants[i].attempt << ", program "
            << plan.variants[i].program << "\n    " << pythonLiteral(source(plan.variants[i].program)) << ",\n";
    out << "]\n\n# The known shapes: log(1 + axis) of ";
    for (std::size_t k = 0; k < axes.size(); ++k)
        out << (k ? ", " : "") << commentText(axes[k].axis);
    out << ", and the variant each runs.\n_ks_SHAPES = [\n";
    char literal[40];
    for (const DispatchPlan::Case& c : plan.cases) {
        out << "    ((";
        for (std::size_t k = 0; k < axes.size(); ++k) {
            const auto it =
                std::find_if(c.axes.begin(), c.axes.end(), [&](const auto& a) { return a.first == axes[k].axis; });
            std::snprintf(
                literal, sizeof literal, "%.17g", std::log1p(static_cast<double>(it != c.axes.end() ? it->second : 0)));
            out << literal << (axes.size() == 1 ? "," : k + 1 < axes.size() ? ", " : "");
        }
        out << "), " << c.variant << "),  # workload " << commentText(c.workload) << ":";
        for (const auto& [axis, value] : c.axes)
            out << " " << commentText(axis) << " " << value;
        out << "\n";
    }
    out << "]\n\n\n"
           "def _ks_load(index):\n"
           "    name = \"ks_dispatch_variant_%d\" % index\n"
           "    filename = \"<%s>\" % name\n"
           "    text = _ks_SOURCES[index]\n"
           "    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)\n"
           "    module = types.ModuleType(name)\n"
           "    module.__file__ = filename\n"
           "    sys.modules[name] = module\n"
           "    exec(compile(text, filename, \"exec\"), module.__dict__)\n"
           "    return module.run\n\n\n"
           "def _ks_destination_passing(fn):\n"
           "    \"\"\"As the Python runner decides it: the inputs and then the outputs, or the inputs alone.\"\"\"\n"
           "    try:\n"
           "        params = list(inspect.signature(fn).parameters.values())\n"
           "    except (TypeError, ValueError):\n"
           "        return True\n"
           "    if any(p.kind == p.VAR_POSITIONAL for p in params):\n"
           "        return True\n"
           "    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]\n"
           "    required = [p for p in positional if p.default is p.empty]\n"
           "    return len(required) <= _ks_N_INPUTS + _ks_N_OUTPUTS <= len(positional)\n\n\n"
           "def _ks_caller(fn):\n"
           "    if _ks_destination_passing(fn):\n"
           "        return lambda args: fn(*args)\n\n"
           "    def returning(args):\n"
           "        result = fn(*args[:_ks_N_INPUTS])\n"
           "        results = result if isinstance(result, (tuple, list)) else (result,)\n"
           "        for given, made in zip(args[_ks_N_INPUTS:], results):\n"
           "            given.copy_(made)\n"
           "    return returning\n\n\n"
           "_ks_CALLS = [_ks_caller(_ks_load(i)) for i in range(len(_ks_SOURCES))]\n"
           "_ks_CHOSEN = {}\n\n\n"
           "def _ks_variant(shape):\n"
           "    point = [math.log1p(v) for v in shape]\n"
           "    nearest = min(_ks_SHAPES, key=lambda known: sum((a - b) ** 2 for a, b in zip(point, known[0])))\n"
           "    return nearest[1]\n\n\n"
           "def run(";
    for (std::size_t i = 0; i < names.size(); ++i)
        out << (i ? ", " : "") << names[i];
    out << "):\n    _ks_args = (";
    for (std::size_t i = 0; i < names.size(); ++i)
        out << names[i] << (names.size() == 1 || i + 1 < names.size() ? ", " : "");
    out << ")\n    _ks_shape = (";
    for (std::size_t k = 0; k < axes.size(); ++k)
        out << names[static_cast<std::size_t>(axes[k].parameter)] << ".shape[" << axes[k].dim << "]"
            << (axes.size() == 1 || k + 1 < axes.size() ? ", " : "");
    out << ")\n"
           "    _ks_chosen = _ks_CHOSEN.get(_ks_shape)\n"
           "    if _ks_chosen is None:\n"
           "        _ks_chosen = _ks_CHOSEN[_ks_shape] = _ks_variant(_ks_shape)\n"
           "    return _ks_CALLS[_ks_chosen](_ks_args)\n";
    return out.str();
}

} // namespace ks
