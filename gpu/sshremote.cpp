#include "sshremote.h"

#include <algorithm>
#include <cstdlib>

namespace ks {

namespace {

// Every part of an address goes through two shells unquoted (the local `sh -c` that starts the
// worker, then the remote one that ssh hands the command to), so only characters that no shell
// treats specially are taken: letters, digits and . _ - (with : for an IPv6 address, / and + and
// ~ in a path), and no leading '-', which ssh would read as an option.
bool plainWord(const std::string& s, const std::string& extra = "")
{
    return !s.empty() && s.front() != '-' && std::all_of(s.begin(), s.end(), [&](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'
            || extra.find(c) != std::string::npos;
    });
}

} // namespace

std::string defaultSshCommand()
{
    const char* env = std::getenv("KSEARCH_SSH");
    return env && *env ? env : "ssh";
}

std::optional<std::string> sshWorkerCommand(const std::string& url, const std::string& ssh, std::string& error)
{
    const std::string scheme = "ssh://";
    if (url.rfind(scheme, 0) != 0) {
        error = "'" + url + "' is not an ssh:// address (ssh://[user@]host[:port][/path/to/ksearch])";
        return std::nullopt;
    }
    std::string rest = url.substr(scheme.size());
    std::string path;
    if (const auto slash = rest.find('/'); slash != std::string::npos) {
        path = rest.substr(slash);
        rest = rest.substr(0, slash);
    }
    std::string user;
    if (const auto at = rest.rfind('@'); at != std::string::npos) {
        user = rest.substr(0, at);
        rest = rest.substr(at + 1);
        if (!plainWord(user)) {
            error = "'" + url + "': the user name '" + user + "' may hold letters, digits, '.', '_' and '-' only";
            return std::nullopt;
        }
    }
    std::string host = rest, port;
    bool portGiven = false; // a ':' after the host: a port must follow
    if (!rest.empty() && rest.front() == '[') { // [v6::address]:port
        const auto close = rest.find(']');
        host = close == std::string::npos ? rest : rest.substr(1, close - 1);
        if (close != std::string::npos && close + 1 < rest.size()) {
            if (rest[close + 1] != ':') {
                error = "'" + url + "': expected ':PORT' after the bracketed address";
                return std::nullopt;
            }
            portGiven = true;
            port = rest.substr(close + 2);
        }
        if (close == std::string::npos || !plainWord(host, ":")) {
            error = "'" + url + "': the address in brackets is not an IPv6 address";
            return std::nullopt;
        }
    } else if (const auto colon = rest.find(':'); colon != std::string::npos) {
        portGiven = true;
        host = rest.substr(0, colon);
        port = rest.substr(colon + 1);
    }
    if (host.empty() || !plainWord(host, host.find(':') != std::string::npos ? ":" : "")) {
        error = "'" + url + "': no host name, or one with characters a host name does not have";
        return std::nullopt;
    }
    const bool digits = !port.empty() && port.size() <= 5
        && std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (portGiven && (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535)) {
        error = "'" + url + "': the port '" + port + "' is not a number from 1 to 65535";
        return std::nullopt;
    }
    if (path == "/") {
        error = "'" + url + "': the path after the host names the remote ksearch executable, not '/'";
        return std::nullopt;
    }
    if (!path.empty() && !plainWord(path, "/+~")) {
        error = "'" + url + "': the path '" + path
            + "' may hold letters, digits and . _ - / + ~ only (it passes through two shells); use --worker "
              "with your own ssh command for another";
        return std::nullopt;
    }
    std::string command = ssh + " -o BatchMode=yes";
    if (!port.empty())
        command += " -p " + port;
    command += " " + (user.empty() ? std::string() : user + "@") + host;
    command += " " + (path.empty() ? std::string("ksearch") : path) + " worker";
    return command;
}

} // namespace ks
