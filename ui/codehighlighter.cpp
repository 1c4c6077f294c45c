#include "codehighlighter.h"

#include <QStringList>

namespace ks::ui {

namespace {

// Block states: what an unfinished span at the end of a line leaves open.
constexpr int kNothingOpen = 0;
constexpr int kBlockComment = 1; // C++ /* ... */
constexpr int kTripleDouble = 2; // Python """ ... """
constexpr int kTripleSingle = 3; // Python ''' ... '''

const char* const cppKeywords[] = {"alignas", "alignof", "asm", "auto", "break", "case", "catch", "class", "const",
    "consteval", "constexpr", "constinit", "const_cast", "continue", "decltype", "default", "delete", "do",
    "dynamic_cast", "else", "enum", "explicit", "extern", "false", "for", "friend", "goto", "if", "inline", "mutable",
    "namespace", "new", "noexcept", "nullptr", "operator", "private", "protected", "public", "register",
    "reinterpret_cast", "return", "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template",
    "this", "throw", "true", "try", "typedef", "typename", "union", "using", "virtual", "volatile", "while"};
const char* const cppTypes[] = {"bool", "char", "double", "float", "int", "long", "short", "signed", "unsigned", "void",
    "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "KsArgs",
    "ks_stream_t"};
const char* const cudaKeywords[] = {"__global__", "__device__", "__host__", "__shared__", "__constant__",
    "__restrict__", "__forceinline__", "__noinline__", "__launch_bounds__", "__managed__", "__grid_constant__"};
const char* const cudaTypes[] = {"dim3", "half", "half2", "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162",
    "__nv_fp8_e4m3", "__nv_fp8_e5m2", "cudaStream_t", "cudaError_t", "float2", "float4", "int2", "int4", "uint2",
    "uint4"};
const char* const cudaBuiltins[] = {"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "__syncthreads",
    "__syncwarp", "__shfl_sync", "__shfl_xor_sync", "__shfl_down_sync", "__shfl_up_sync", "atomicAdd", "atomicMax",
    "atomicCAS", "__ldg", "__expf", "__logf", "__fdividef", "rsqrtf"};
const char* const pythonKeywords[] = {"False", "None", "True", "and", "as", "assert", "async", "await", "break",
    "class", "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"};
const char* const pythonBuiltins[] = {"abs", "all", "any", "bool", "dict", "enumerate", "float", "int", "len", "list",
    "max", "min", "print", "range", "self", "str", "sum", "tuple", "zip", "torch", "triton", "tl"};

template<std::size_t N> QRegularExpression words(const char* const (&list)[N])
{
    QStringList escaped;
    for (const char* w : list)
        escaped << QRegularExpression::escape(QLatin1String(w));
    return QRegularExpression(QStringLiteral("(?<![\\w.])(?:%1)(?!\\w)").arg(escaped.join(u'|')));
}

bool isCpp(Language l)
{
    return l == Language::Cuda || l == Language::Cpp;
}

} // namespace

CodeHighlighter::CodeHighlighter(QTextDocument* document, Language language)
    : QSyntaxHighlighter(document)
    , m_language(language)
{
    buildRules();
}

void CodeHighlighter::setLanguage(Language language)
{
    if (language == m_language)
        return;
    m_language = language;
    buildRules();
    rehighlight();
}

QTextCharFormat CodeHighlighter::format(CodeCategory category)
{
    QTextCharFormat f;
    switch (category) {
    case CodeCategory::Keyword:
        f.setForeground(QColor(0x1f, 0x4e, 0xb4));
        f.setFontWeight(QFont::Bold);
        break;
    case CodeCategory::Type:
        f.setForeground(QColor(0x00, 0x7a, 0x7a));
        break;
    case CodeCategory::Builtin:
        f.setForeground(QColor(0x8a, 0x3f, 0xb8));
        break;
    case CodeCategory::Preprocessor:
        f.setForeground(QColor(0x9c, 0x5d, 0x00));
        break;
    case CodeCategory::Comment:
        f.setForeground(QColor(0x6a, 0x73, 0x7d));
        f.setFontItalic(true);
        break;
    case CodeCategory::String:
        f.setForeground(QColor(0x0a, 0x7d, 0x28));
        break;
    case CodeCategory::Number:
        f.setForeground(QColor(0xb3, 0x2d, 0x2d));
        break;
    case CodeCategory::Decorator:
        f.setForeground(QColor(0xb0, 0x5a, 0x00));
        break;
    }
    return f;
}

void CodeHighlighter::buildRules()
{
    m_rules.clear();
    const QRegularExpression number(
        QStringLiteral("(?<![\\w.])(?:0[xX][0-9a-fA-F']+|\\d[\\d']*\\.?\\d*(?:[eE][+-]?\\d+)?)[uUlLfF]*(?!\\w)"));
    if (isCpp(m_language)) {
        m_rules.push_back({words(cppKeywords), CodeCategory::Keyword});
        m_rules.push_back({words(cppTypes), CodeCategory::Type});
        if (m_language == Language::Cuda) {
            m_rules.push_back({words(cudaKeywords), CodeCategory::Keyword});
            m_rules.push_back({words(cudaTypes), CodeCategory::Type});
            m_rules.push_back({words(cudaBuiltins), CodeCategory::Builtin});
        }
        m_rules.push_back({number, CodeCategory::Number});
        m_rules.push_back({QRegularExpression(QStringLiteral("^\\s*#\\s*\\w+")), CodeCategory::Preprocessor});
    } else {
        m_rules.push_back({words(pythonKeywords), CodeCategory::Keyword});
        m_rules.push_back({words(pythonBuiltins), CodeCategory::Builtin});
        m_rules.push_back({number, CodeCategory::Number});
        m_rules.push_back({QRegularExpression(QStringLiteral("^\\s*@[\\w.]+")), CodeCategory::Decorator});
    }
}

int CodeHighlighter::closeCarried(const QString& text, int state) const
{
    const QString close = state == kBlockComment ? QStringLiteral("*/")
        : state == kTripleDouble                 ? QStringLiteral("\"\"\"")
                                                 : QStringLiteral("'''");
    const int at = text.indexOf(close);
    return at < 0 ? -1 : at + close.size();
}

CodeHighlighter::Span CodeHighlighter::nextSpan(const QString& text, int from) const
{
    const bool cpp = isCpp(m_language);
    for (int i = from; i < text.size(); ++i) {
        const QChar c = text[i];
        if (cpp && c == u'/' && i + 1 < text.size() && text[i + 1] == u'/')
            return {i, static_cast<int>(text.size()), CodeCategory::Comment};
        if (cpp && c == u'/' && i + 1 < text.size() && text[i + 1] == u'*') {
            const int close = text.indexOf(QStringLiteral("*/"), i + 2);
            return close < 0 ? Span {i, -1, CodeCategory::Comment, kBlockComment}
                             : Span {i, close + 2, CodeCategory::Comment};
        }
        if (!cpp && c == u'#')
            return {i, static_cast<int>(text.size()), CodeCategory::Comment};
        if (!cpp && (c == u'"' || c == u'\'') && text.mid(i, 3) == QString(3, c)) {
            const int close = text.indexOf(QString(3, c), i + 3);
            return close < 0 ? Span {i, -1, CodeCategory::String, c == u'"' ? kTripleDouble : kTripleSingle}
                             : Span {i, close + 3, CodeCategory::String};
        }
        if (c == u'"' || (c == u'\'' && !(cpp && i > 0 && text[i - 1].isLetterOrNumber()))) {
            int j = i + 1;
            while (j < text.size() && text[j] != c)
                j += text[j] == u'\\' ? 2 : 1;
            return {i, static_cast<int>(std::min<qsizetype>(j + 1, text.size())), CodeCategory::String};
        }
    }
    return {};
}

void CodeHighlighter::colourCode(const QString& text, int from, int to)
{
    if (to <= from)
        return;
    const QString part = text.mid(from, to - from);
    for (const Rule& rule : m_rules) {
        // Anchored rules (the preprocessor, decorators) only hold at the start of the line.
        if (from > 0 && rule.pattern.pattern().startsWith(u'^'))
            continue;
        for (auto it = rule.pattern.globalMatch(part); it.hasNext();) {
            const auto m = it.next();
            setFormat(from + static_cast<int>(m.capturedStart()), static_cast<int>(m.capturedLength()),
                format(rule.category));
        }
    }
}

void CodeHighlighter::highlightBlock(const QString& text)
{
    setCurrentBlockState(kNothingOpen);
    int pos = 0;
    const int carried = previousBlockState();
    if (carried > kNothingOpen) {
        const CodeCategory category = carried == kBlockComment ? CodeCategory::Comment : CodeCategory::String;
        const int end = closeCarried(text, carried);
        if (end < 0) {
            setFormat(0, static_cast<int>(text.size()), format(category));
            setCurrentBlockState(carried);
            return;
        }
        setFormat(0, end, format(category));
        pos = end;
    }
    while (pos < text.size()) {
        const Span span = nextSpan(text, pos);
        if (span.start < 0) {
            colourCode(text, pos, static_cast<int>(text.size()));
            return;
        }
        colourCode(text, pos, span.start);
        const int end = span.end < 0 ? static_cast<int>(text.size()) : span.end;
        setFormat(span.start, end - span.start, format(span.category));
        if (span.end < 0) {
            setCurrentBlockState(span.carries);
            return;
        }
        pos = end;
    }
}

} // namespace ks::ui
