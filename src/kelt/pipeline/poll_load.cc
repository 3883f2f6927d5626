// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/poll_load.h"

#include <algorithm>

#include "kelt/common/parallel.h"

namespace kelt {

namespace {

// Load records [begin, end) of `w` with `loader`; on failure the partial window is
// dropped (the loader stays usable).
Result<LoadedWindow> LoadRange(const Window& w, Loader& loader, size_t begin,
                               size_t end) {
  // The loader's errors keep RDP's texts and name the record ("(at topic[p]@offset, …").
  auto loaded = [&]() -> Result<LoadedWindow> {
    const int64_t share = static_cast<int64_t>(end - begin);
    const int64_t bytes =
        w.empty() ? 0 : w.bytes() * share / static_cast<int64_t>(w.size());
    KELT_RETURN_NOT_OK(loader.Reserve(share, bytes));
    const bool headers = loader.needs_headers();
    for (size_t i = begin; i < end; ++i) {
      KELT_RETURN_NOT_OK(loader.Append(w.record(i, headers)));
    }
    return loader.Finish();
  }();
  if (!loaded.ok()) (void)loader.Finish();
  return loaded;
}

// Give `w` back after `failure`; a failed rewind leaves a consumer that read past it.
Status GiveBack(Consumer& consumer, const Window& w, const Status& failure) {
  Status rewound = consumer.Rewind(w);
  if (!rewound.ok()) {
    return rewound.WithPrefix(failure.message() +
                              "; giving the window back failed (close this consumer "
                              "and make a new one to read it again): ");
  }
  return failure;
}

}  // namespace

Result<std::vector<LoadedWindow>> LoadWindowParallel(
    const Window& window, std::span<const std::unique_ptr<Loader>> loaders,
    int64_t min_records_per_loader) {
  if (loaders.empty()) return Status::Invalid("LoadWindowParallel: no loader");
  const size_t n = window.size();
  size_t k = loaders.size();
  const auto per = static_cast<size_t>(std::max<int64_t>(1, min_records_per_loader));
  while (k > 1 && n / k < per) --k;
  std::vector<Result<LoadedWindow>> parts(k, Status::Internal("not loaded"));
  internal::ParallelFor(k, k, [&](size_t part) {
    parts[part] = LoadRange(window, *loaders[part], n * part / k, n * (part + 1) / k);
  });
  std::vector<LoadedWindow> out;
  out.reserve(k);
  for (auto& part : parts) {
    if (!part.ok()) return part.status();  // the first failure in record order
    out.push_back(std::move(*part));
  }
  return out;
}

Result<LoadedPoll> PollLoaded(Consumer& consumer, Loader& loader,
                              const WindowOptions& options) {
  KELT_ASSIGN_OR_RAISE(Window w, consumer.Poll(options));
  auto loaded = LoadRange(w, loader, 0, w.size());
  if (!loaded.ok()) return GiveBack(consumer, w, loaded.status());
  return LoadedPoll{std::move(w), std::move(*loaded)};
}

Result<std::pair<Window, std::vector<LoadedWindow>>> PollLoadedParallel(
    Consumer& consumer, std::span<const std::unique_ptr<Loader>> loaders,
    const WindowOptions& options) {
  KELT_ASSIGN_OR_RAISE(Window w, consumer.Poll(options));
  auto parts = LoadWindowParallel(w, loaders);
  if (!parts.ok()) return GiveBack(consumer, w, parts.status());
  return std::pair{std::move(w), std::move(*parts)};
}

}  // namespace kelt

namespace kelt::rdp {

Result<LoadedWindow> PollKafkaWindowLoaded(const PollCall& call, const Schema& landing,
                                           const LoadOptions& options) {
  // Build the loader first: a bad landing schema must fail before anything is consumed.
  KELT_ASSIGN_OR_RAISE(auto loader, Loader::Make(landing, options));
  Result<LoadedWindow> landed = Status::Internal("not polled");
  KELT_RETURN_NOT_OK(PollKafkaWindowThen(call, [&](const Window& w) -> Status {
    KELT_RETURN_NOT_OK(loader->Reserve(static_cast<int64_t>(w.size()), w.bytes()));
    const bool headers = loader->needs_headers();
    for (size_t i = 0; i < w.size(); ++i) {
      KELT_RETURN_NOT_OK(loader->Append(w.record(i, headers)));
    }
    landed = loader->Finish();
    // The window is landed in memory only; the caller owns durability from here.
    return landed.status();
  }));
  return landed;
}

}  // namespace kelt::rdp
