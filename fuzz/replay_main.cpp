// SPDX-License-Identifier: MIT
// Replays fuzz inputs without libFuzzer: every file named on the command line,
// and every file of every directory named (sorted by name, not recursive), is
// fed once to LLVMFuzzerTestOneInput. A failed check aborts, so the exit code
// tells CTest. Plain C++ (no exceptions needed): builds on every target of the
// matrix.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool read_file(const std::string& path, std::vector<uint8_t>& bytes) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return false;
    bytes.clear();
    uint8_t buffer[4096];
    size_t got = 0;
    while ((got = std::fread(buffer, 1, sizeof buffer, f)) > 0)
        bytes.insert(bytes.end(), buffer, buffer + got);
    const bool ok = std::ferror(f) == 0;
    std::fclose(f);
    return ok;
}

/// Files to replay: skips hidden files and the notes kept next to inputs.
bool is_input(const std::filesystem::path& p) {
    const std::string name = p.filename().string();
    return !name.empty() && name[0] != '.' && p.extension() != ".md" && p.extension() != ".txt";
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        const std::filesystem::path arg(argv[i]);
        std::error_code ec;
        if (std::filesystem::is_directory(arg, ec)) {
            std::vector<std::string> found;
            std::filesystem::directory_iterator it(arg, ec);
            for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
                if (it->is_regular_file(ec) && is_input(it->path())) found.push_back(it->path().string());
            if (ec) {
                std::fprintf(stderr, "cannot list %s\n", argv[i]);
                return 2;
            }
            std::sort(found.begin(), found.end());
            files.insert(files.end(), found.begin(), found.end());
        } else if (std::filesystem::exists(arg, ec)) {
            files.push_back(arg.string());
        } else {
            // A missing directory (e.g. no regressions yet) replays nothing.
            std::fprintf(stderr, "note: %s does not exist, skipped\n", argv[i]);
        }
    }
    std::vector<uint8_t> bytes;
    for (const std::string& path : files) {
        if (!read_file(path, bytes)) {
            std::fprintf(stderr, "cannot read %s\n", path.c_str());
            return 2;
        }
        // A failing input is named before the target aborts.
        std::fprintf(stderr, "replay %s\n", path.c_str());
        LLVMFuzzerTestOneInput(bytes.empty() ? nullptr : bytes.data(), bytes.size());
    }
    std::printf("replayed %zu inputs\n", files.size());
    return 0;
}
