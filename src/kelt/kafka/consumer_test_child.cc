// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Test helper process for ConsumerTest.ConsumerKilledMidWindowRereadsOnlyUncommitted:
// consume one window of N records and commit it, poll a second window, then die by
// SIGKILL before committing it — a consumer killed mid-window.
// Usage: kafka_consumer_test_child BOOTSTRAPS TOPIC GROUP N [classic|consumer]
#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kelt/kafka.h"

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) return 2;
  kelt::ConsumerOptions o;
  o.brokers = argv[1];
  o.topics = {argv[2]};
  o.group_id = argv[3];
  if (argc == 6 && std::string(argv[5]) == "consumer") {
    o.group_protocol = kelt::GroupProtocol::kConsumer;  // the cluster's session timeout
  } else {
    o.session_timeout_ms = 6000;
  }
  auto c = kelt::Consumer::Make(o);
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
    return 3;
  }
  kelt::WindowOptions opts;
  opts.max_records = std::atoll(argv[4]);
  auto w = (*c)->Poll(opts);
  if (!w.ok() || static_cast<long long>(w->size()) != opts.max_records) return 4;
  if (!(*c)->Commit(*w).ok()) return 5;
  auto w2 = (*c)->Poll(opts);  // the window being landed when the process dies
  if (!w2.ok() || w2->empty()) return 6;
  kill(getpid(), SIGKILL);
  return 7;
}
