#pragma once

#include <optional>
#include <string>

namespace ks {

// `--remote ssh://[user@]host[:port][/path/to/ksearch]`: the shell command that starts a
// ksearch worker there over ssh, with the user's ssh configuration and agent (nothing of ssh's
// is reimplemented). `ssh` is the ssh command to use, words separated by spaces: $KSEARCH_SSH
// when set (as git's GIT_SSH_COMMAND: a key, a config file), else "ssh". BatchMode is always
// on, so a host that would ask for a password fails at once with ssh's own words instead of
// waiting for a terminal. nullopt, with `error` naming the part, for a malformed address.
std::optional<std::string> sshWorkerCommand(const std::string& url, const std::string& ssh, std::string& error);

// $KSEARCH_SSH, else "ssh".
std::string defaultSshCommand();

} // namespace ks
