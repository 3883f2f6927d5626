// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The registry client's HTTP: one libcurl request at a time per HttpClient, with the
// options' credentials, TLS material, timeout and retries. Internal header.
#pragma once

#include <string>

#include "kelt/registry.h"
#include "kelt/status.h"

namespace kelt::registry {

struct HttpResponse {
  long status = 0;  ///< the HTTP status code
  std::string body;
};

/// `url` without the user:password@ part, which ends up in `*username`/`*password`
/// when those are empty.
std::string StripCredentials(const std::string& url, std::string* username,
                             std::string* password);

class HttpClient {
 public:
  explicit HttpClient(const RegistryOptions& options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// GET (`body` null) or POST `*body` as the registry's JSON to base URL + `path`.
  /// Transport failures, 5xx and 429 are tried again (options.retries); an answer that
  /// is still one of those, or a transport failure, is an error naming the URL. Any
  /// other status is returned for the caller to read.
  Result<HttpResponse> Request(const std::string& path, const std::string* body);

  /// Percent-encode a path segment (a subject name).
  std::string Escape(const std::string& segment);

  const std::string& display_url() const { return display_url_; }

 private:
  Result<HttpResponse> Once(const std::string& url, const std::string* body);

  RegistryOptions o_;
  std::string display_url_;
  void* curl_ = nullptr;  // CURL*, reused (connections stay open between requests)
};

}  // namespace kelt::registry
