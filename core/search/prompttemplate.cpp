#include "prompttemplate.h"

#include <QFile>

#include <set>
#include <stdexcept>

namespace ks {

std::string promptTemplate(const std::string& name)
{
    QFile f(QStringLiteral(":/prompts/%1.txt").arg(QString::fromStdString(name)));
    if (!f.open(QIODevice::ReadOnly))
        throw std::logic_error("no prompt template '" + name + "'");
    return f.readAll().toStdString();
}

std::string renderPrompt(const std::string& name, const std::map<std::string, std::string>& fields)
{
    const std::string text = promptTemplate(name);
    std::string out;
    std::set<std::string> used;
    std::size_t pos = 0;
    while (true) {
        const std::size_t open = text.find("{{", pos);
        if (open == std::string::npos) {
            out += text.substr(pos);
            break;
        }
        const std::size_t close = text.find("}}", open);
        if (close == std::string::npos)
            throw std::logic_error("prompt template '" + name + "': unclosed {{");
        out += text.substr(pos, open - pos);
        const std::string field = text.substr(open + 2, close - open - 2);
        const auto it = fields.find(field);
        if (it == fields.end())
            throw std::logic_error("prompt template '" + name + "': no value for {{" + field + "}}");
        out += it->second;
        used.insert(field);
        pos = close + 2;
    }
    for (const auto& [field, value] : fields)
        if (!used.count(field))
            throw std::logic_error("prompt template '" + name + "' has no {{" + field + "}}");
    // Fields left empty leave runs of blank lines behind.
    std::string tidy;
    int newlines = 0;
    for (char c : out) {
        newlines = c == '\n' ? newlines + 1 : 0;
        if (newlines <= 2)
            tidy += c;
    }
    return tidy;
}

} // namespace ks
