#include "job.h"

#include <fstream>
#include <stdexcept>

namespace ksr {

Job readJob(const std::string& dir)
{
    std::ifstream in(dir + "/job.json");
    if (!in)
        throw std::runtime_error(dir + "/job.json: cannot open");
    try {
        nlohmann::json j;
        in >> j;
        Job job = jobFromJson(j);
        job.dir = dir;
        return job;
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(dir + "/job.json: " + e.what());
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(dir + "/job.json: " + e.what());
    }
}

} // namespace ksr
