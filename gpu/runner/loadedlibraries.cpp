#include "loadedlibraries.h"

#include <link.h>

namespace ksr {

std::set<std::string> loadedObjects()
{
    std::set<std::string> objects;
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
            // The program itself has no name; the vDSO is the kernel's, not a file.
            if (info->dlpi_name && info->dlpi_name[0] == '/')
                static_cast<std::set<std::string>*>(data)->insert(info->dlpi_name);
            return 0;
        },
        &objects);
    return objects;
}

std::vector<std::string> loadedSince(const std::set<std::string>& before, const std::string& candidate)
{
    std::vector<std::string> added;
    for (const std::string& object : loadedObjects())
        if (object != candidate && !before.contains(object))
            added.push_back(object);
    return added;
}

} // namespace ksr
