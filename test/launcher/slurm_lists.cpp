// slurm_lists -- mpirun's reading of Slurm's compressed node and count lists
// (src/launcher/slurm.cpp), against the forms Slurm writes.
#include "launcher/slurm.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace axon::launcher;

static int failures = 0;

static void expect_nodes(const char *list, const std::vector<std::string> &want) {
    std::vector<std::string> got;
    bool ok = expand_slurm_nodelist(list, got);
    if (!ok || got != want) {
        std::printf("FAIL: nodelist '%s' gave %zu names (ok=%d)\n", list, got.size(), ok);
        ++failures;
    }
}

static void expect_counts(const char *list, const std::vector<int> &want) {
    std::vector<int> got;
    bool ok = expand_slurm_counts(list, got);
    if (!ok || got != want) {
        std::printf("FAIL: counts '%s' gave %zu values (ok=%d)\n", list, got.size(), ok);
        ++failures;
    }
}

static void expect_bad_nodes(const char *list) {
    std::vector<std::string> got;
    if (expand_slurm_nodelist(list, got)) {
        std::printf("FAIL: nodelist '%s' accepted\n", list);
        ++failures;
    }
}

int main() {
    expect_nodes("n1", {"n1"});
    expect_nodes("n[1-3,7],gpu01", {"n1", "n2", "n3", "n7", "gpu01"});
    expect_nodes("n[08-11]", {"n08", "n09", "n10", "n11"});
    expect_nodes("rack[1-2]-x,login", {"rack1-x", "rack2-x", "login"});
    expect_bad_nodes("n[1-");
    expect_bad_nodes("n[3-1]");
    expect_bad_nodes("n[a-b]");
    expect_counts("4", {4});
    expect_counts("2(x3),1", {2, 2, 2, 1});
    expect_counts("1(x2),8(x1)", {1, 1, 8});
    std::vector<int> bad;
    if (expand_slurm_counts("2(x", bad)) {
        std::printf("FAIL: counts '2(x' accepted\n");
        ++failures;
    }
    if (failures == 0) std::printf("slurm lists OK\n");
    return failures == 0 ? 0 : 1;
}
