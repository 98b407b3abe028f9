// head_address.hpp -- the addresses of mpirun (the head) that its daemons try.
//
// A head node often has several networks (a public one, a cluster one, a
// management one), and a node may reach only some of them. mpirun gives each
// daemon a list, best first; the daemon tries them in turn (daemon.cpp).
#pragma once

#include <string>
#include <vector>

namespace axon::launcher {

// IPv4 addresses of the interfaces that are up and match one of `specs`
// (interface names, shell patterns such as eth*, or CIDR subnets such as
// 10.0.0.0/8), in interface order. `error` names a spec that matches nothing.
bool interface_addresses(const std::vector<std::string> &specs, std::vector<std::string> &addresses,
                         std::string &error);

// The list for the daemon on `host`: `chosen` when the user gave addresses;
// else the source address of this machine's route to `host` first, then
// every other non-loopback IPv4 address that is up (127.0.0.1 when there is
// none).
std::vector<std::string> head_addresses_for(const std::string &host, const std::vector<std::string> &chosen);

}  // namespace axon::launcher
