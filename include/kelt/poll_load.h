// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Extract and Load wired together (pipeline/): poll a window from a Consumer and load
// it with Loaders, giving the window back when it cannot be loaded; and RDP's loaded
// stateless poll. The ELT loop (elt.h) is built on these.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "kelt/kafka.h"
#include "kelt/load.h"
#include "kelt/rdp.h"
#include "kelt/status.h"

namespace kelt {

/// One window polled and loaded.
struct LoadedPoll {
  Window window;
  LoadedWindow loaded;
};

/// Poll one window from `consumer` and load it with `loader`. When loading fails (a bad
/// record under the `fail` policy; the loader's error, RDP's text, names the record's
/// topic, partition and offset) the partial window is dropped and the window is given
/// back (Consumer::Rewind): the next call reads it again, so no record is ever passed
/// over by a later commit.
Result<LoadedPoll> PollLoaded(Consumer& consumer, Loader& loader,
                              const WindowOptions& options);

/// Load `window` with several loaders at once (one thread each; loaders made with the
/// same schema and options, e.g. by MakeLoaderPerCore): loader k takes the k-th
/// contiguous share of the records, so the parts, in order, hold the rows in record
/// order. Windows under `min_records_per_loader` records per loader use fewer loaders (at
/// least one). On an error the first failing record's error (in record order) is returned
/// and every loader is reset.
Result<std::vector<LoadedWindow>> LoadWindowParallel(
    const Window& window, std::span<const std::unique_ptr<Loader>> loaders,
    int64_t min_records_per_loader = 16'384);

/// PollLoaded with LoadWindowParallel: the window and its loaded parts. A window that
/// fails to load is given back, as in PollLoaded.
Result<std::pair<Window, std::vector<LoadedWindow>>> PollLoadedParallel(
    Consumer& consumer, std::span<const std::unique_ptr<Loader>> loaders,
    const WindowOptions& options);

}  // namespace kelt

namespace kelt::rdp {

/// poll_kafka_window_loaded: the window loaded into `landing` (bad-record policy `fail`
/// unless `options` says otherwise).
Result<LoadedWindow> PollKafkaWindowLoaded(const PollCall& call, const Schema& landing,
                                           const LoadOptions& options = {});

}  // namespace kelt::rdp
