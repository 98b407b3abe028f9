// The communication report's data, its serialization for the gather to rank
// 0, and its renderings (text, CSV, JSON). See report.h.
#include "diag/report.h"

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstring>
#include <map>
#include <tuple>

namespace axon::diag::report {

namespace {

// ---- serialization: little records of u64s and length-prefixed strings ----

void put(std::vector<uint8_t>* out, uint64_t v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof v);
}

void put(std::vector<uint8_t>* out, const std::string& s) {
  put(out, static_cast<uint64_t>(s.size()));
  out->insert(out->end(), s.begin(), s.end());
}

struct Reader {
  const uint8_t* at;
  const uint8_t* end;
  bool ok = true;
  uint64_t u64() {
    uint64_t v = 0;
    if (end - at < static_cast<ptrdiff_t>(sizeof v)) {
      ok = false;
      return 0;
    }
    std::memcpy(&v, at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::string str() {
    uint64_t n = u64();
    if (!ok || static_cast<uint64_t>(end - at) < n) {
      ok = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(at), n);
    at += n;
    return s;
  }
};

void put_pairs(std::vector<uint8_t>* out, const std::vector<PairTraffic>& pairs) {
  put(out, pairs.size());
  for (const PairTraffic& p : pairs) {
    put(out, static_cast<uint64_t>(p.from));
    put(out, static_cast<uint64_t>(p.to));
    put(out, p.transport);
    for (int k = 0; k < 2; ++k) {
      put(out, p.messages[k]);
      put(out, p.bytes[k]);
    }
  }
}

void get_pairs(Reader& in, std::vector<PairTraffic>* pairs) {
  uint64_t n = in.u64();
  for (uint64_t i = 0; i < n && in.ok; ++i) {
    PairTraffic p;
    p.from = static_cast<int>(in.u64());
    p.to = static_cast<int>(in.u64());
    p.transport = in.str();
    for (int k = 0; k < 2; ++k) {
      p.messages[k] = in.u64();
      p.bytes[k] = in.u64();
    }
    if (in.ok) pairs->push_back(std::move(p));
  }
}

// ---- what the renderings share -------------------------------------------

const char* const kProtocolNames[2] = {"eager", "rendezvous"};

// The members' lines of one communicator and call, summed (text output).
struct CallSummary {
  std::string communicator, call;
  int size = 0;
  uint64_t calls_min = UINT64_MAX, calls_max = 0, bytes = 0;
  std::vector<std::string> algorithms;
};

std::vector<CallSummary> summarize(const std::vector<CollectiveCalls>& calls) {
  std::map<std::tuple<uint32_t, int, std::string, int, std::string>, CallSummary> by_call;
  for (const CollectiveCalls& c : calls) {
    CallSummary& s = by_call[{c.context_id, c.leader, c.communicator, c.size, c.call}];
    s.communicator = c.communicator;
    s.call = c.call;
    s.size = c.size;
    s.calls_min = std::min(s.calls_min, c.calls);
    s.calls_max = std::max(s.calls_max, c.calls);
    s.bytes += c.bytes;
    for (const std::string& a : c.algorithms)
      if (std::find(s.algorithms.begin(), s.algorithms.end(), a) == s.algorithms.end()) s.algorithms.push_back(a);
  }
  std::vector<CallSummary> out;
  for (auto& [key, s] : by_call) out.push_back(std::move(s));
  return out;
}

std::string joined(const std::vector<std::string>& names, const char* separator) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : separator) + n;
  return s;
}

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string json(const std::string& s) {
  std::string q = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      q += '\\';
      q += static_cast<char>(ch);
    } else if (ch < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      q += buf;
    } else {
      q += static_cast<char>(ch);
    }
  }
  return q + "\"";
}

void print_matrix(FILE* out, const Report& r, bool bytes) {
  std::vector<uint64_t> cell(static_cast<size_t>(r.ranks) * static_cast<size_t>(r.ranks), 0);
  for (const PairTraffic& p : r.point_to_point)
    if (p.from >= 0 && p.from < r.ranks && p.to >= 0 && p.to < r.ranks)
      cell[static_cast<size_t>(p.from) * static_cast<size_t>(r.ranks) + static_cast<size_t>(p.to)] +=
          bytes ? p.total_bytes() : p.total_messages();
  std::fprintf(out, "  %-10s", bytes ? "bytes" : "messages");
  for (int to = 0; to < r.ranks; ++to) std::fprintf(out, " %12d", to);
  std::fprintf(out, "\n");
  for (int from = 0; from < r.ranks; ++from) {
    std::fprintf(out, "  %10d", from);
    for (int to = 0; to < r.ranks; ++to)
      std::fprintf(out, " %12" PRIu64, cell[static_cast<size_t>(from) * static_cast<size_t>(r.ranks) + size_t(to)]);
    std::fprintf(out, "\n");
  }
}

void print_pairs(FILE* out, const std::vector<PairTraffic>& pairs) {
  std::fprintf(out, "  %6s %6s  %-9s %12s %14s %12s %14s\n", "from", "to", "transport", "eager msgs", "eager bytes",
               "rndv msgs", "rndv bytes");
  for (const PairTraffic& p : pairs)
    std::fprintf(out, "  %6d %6d  %-9s %12" PRIu64 " %14" PRIu64 " %12" PRIu64 " %14" PRIu64 "\n", p.from, p.to,
                 p.transport.c_str(), p.messages[0], p.bytes[0], p.messages[1], p.bytes[1]);
}

void csv_pairs(FILE* out, const char* section, const std::vector<PairTraffic>& pairs) {
  for (const PairTraffic& p : pairs)
    for (int k = 0; k < 2; ++k)
      if (p.messages[k])
        std::fprintf(out, "%s,,,,%d,%d,%s,%s,%" PRIu64 ",%" PRIu64 ",\n", section, p.from, p.to,
                     csv(p.transport).c_str(), kProtocolNames[k], p.messages[k], p.bytes[k]);
}

void json_pairs(FILE* out, const char* key, const std::vector<PairTraffic>& pairs) {
  std::fprintf(out, "  %s: [", json(key).c_str());
  for (size_t i = 0; i < pairs.size(); ++i) {
    const PairTraffic& p = pairs[i];
    std::fprintf(out,
                 "%s\n    {\"from\": %d, \"to\": %d, \"transport\": %s, \"eager\": {\"messages\": %" PRIu64
                 ", \"bytes\": %" PRIu64 "}, \"rendezvous\": {\"messages\": %" PRIu64 ", \"bytes\": %" PRIu64 "}}",
                 i ? "," : "", p.from, p.to, json(p.transport).c_str(), p.messages[0], p.bytes[0], p.messages[1],
                 p.bytes[1]);
  }
  std::fprintf(out, "%s]", pairs.empty() ? "" : "\n  ");
}

}  // namespace

void append_to(std::vector<uint8_t>* out, const Report& part) {
  put_pairs(out, part.point_to_point);
  put_pairs(out, part.collective);
  put(out, part.calls.size());
  for (const CollectiveCalls& c : part.calls) {
    put(out, static_cast<uint64_t>(c.rank));
    put(out, c.communicator);
    put(out, c.context_id);
    put(out, static_cast<uint64_t>(c.leader));
    put(out, static_cast<uint64_t>(c.size));
    put(out, c.call);
    put(out, c.calls);
    put(out, c.bytes);
    put(out, c.algorithms.size());
    for (const std::string& a : c.algorithms) put(out, a);
  }
}

bool merge_from(const uint8_t* data, size_t size, Report* into) {
  Reader in{data, data + size};
  get_pairs(in, &into->point_to_point);
  get_pairs(in, &into->collective);
  uint64_t n = in.u64();
  for (uint64_t i = 0; i < n && in.ok; ++i) {
    CollectiveCalls c;
    c.rank = static_cast<int>(in.u64());
    c.communicator = in.str();
    c.context_id = static_cast<uint32_t>(in.u64());
    c.leader = static_cast<int>(in.u64());
    c.size = static_cast<int>(in.u64());
    c.call = in.str();
    c.calls = in.u64();
    c.bytes = in.u64();
    uint64_t algorithms = in.u64();
    for (uint64_t k = 0; k < algorithms && in.ok; ++k) c.algorithms.push_back(in.str());
    if (in.ok) into->calls.push_back(std::move(c));
  }
  return in.ok && in.at == in.end;
}

void print_text(FILE* out, const Report& r) {
  std::fprintf(out, "axon report: point-to-point messages, %d ranks (row: sender, column: receiver)\n", r.ranks);
  if (r.point_to_point.empty()) {
    std::fprintf(out, "  none\n");
  } else {
    if (r.ranks <= kMatrixRanks) {
      print_matrix(out, r, false);
      print_matrix(out, r, true);
    }
    std::fprintf(out, "axon report: point-to-point by pair, transport and protocol\n");
    print_pairs(out, r.point_to_point);
  }
  std::fprintf(out, "axon report: collectives per communicator (calls of each member; bytes: all members)\n");
  std::vector<CallSummary> calls = summarize(r.calls);
  if (calls.empty()) {
    std::fprintf(out, "  none\n");
  } else {
    std::fprintf(out, "  %-24s %6s  %-22s %10s %14s  %s\n", "communicator", "size", "call", "calls", "bytes",
                 "algorithms");
    for (const CallSummary& s : calls) {
      std::string count = std::to_string(s.calls_max);
      // Members that made different numbers of one call: both figures.
      if (s.calls_min != s.calls_max) count = std::to_string(s.calls_min) + "-" + count;
      std::fprintf(out, "  %-24s %6d  %-22s %10s %14" PRIu64 "  %s\n", s.communicator.c_str(), s.size,
                   s.call.c_str(), count.c_str(), s.bytes, joined(s.algorithms, ", ").c_str());
    }
  }
  if (!r.collective.empty()) {
    std::fprintf(out, "axon report: messages the collectives sent, by pair\n");
    print_pairs(out, r.collective);
  }
}

void write_csv(FILE* out, const Report& r) {
  std::fprintf(out, "section,communicator,size,call,from,to,transport,protocol,messages,bytes,algorithms\n");
  csv_pairs(out, "point_to_point", r.point_to_point);
  csv_pairs(out, "collective_traffic", r.collective);
  for (const CollectiveCalls& c : r.calls)
    std::fprintf(out, "collective,%s,%d,%s,%d,,,,%" PRIu64 ",%" PRIu64 ",%s\n", csv(c.communicator).c_str(), c.size,
                 c.call.c_str(), c.rank, c.calls, c.bytes, csv(joined(c.algorithms, ";")).c_str());
}

void write_json(FILE* out, const Report& r) {
  std::fprintf(out, "{\n  \"ranks\": %d,\n", r.ranks);
  json_pairs(out, "point_to_point", r.point_to_point);
  std::fprintf(out, ",\n");
  json_pairs(out, "collective_traffic", r.collective);
  std::fprintf(out, ",\n  \"collectives\": [");
  for (size_t i = 0; i < r.calls.size(); ++i) {
    const CollectiveCalls& c = r.calls[i];
    std::string algorithms;
    for (const std::string& a : c.algorithms) algorithms += (algorithms.empty() ? "" : ", ") + json(a);
    std::fprintf(out,
                 "%s\n    {\"rank\": %d, \"communicator\": %s, \"size\": %d, \"call\": %s, \"calls\": %" PRIu64
                 ", \"bytes\": %" PRIu64 ", \"algorithms\": [%s]}",
                 i ? "," : "", c.rank, json(c.communicator).c_str(), c.size, json(c.call).c_str(), c.calls, c.bytes,
                 algorithms.c_str());
  }
  std::fprintf(out, "%s]\n}\n", r.calls.empty() ? "" : "\n  ");
}

}  // namespace axon::diag::report
