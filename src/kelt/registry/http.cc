// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/registry/http.h"

#include <curl/curl.h>

#include <mutex>
#include <thread>

namespace kelt::registry {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t Collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

bool Retryable(long status) { return status >= 500 || status == 429; }

}  // namespace

std::string StripCredentials(const std::string& url, std::string* username,
                             std::string* password) {
  const size_t scheme = url.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t slash = url.find('/', start);
  const size_t at = url.rfind('@', slash == std::string::npos ? url.size() : slash);
  if (at == std::string::npos || at < start) return url;
  const std::string userinfo = url.substr(start, at - start);
  const size_t colon = userinfo.find(':');
  if (username->empty()) *username = userinfo.substr(0, colon);
  if (password->empty() && colon != std::string::npos) {
    *password = userinfo.substr(colon + 1);
  }
  return url.substr(0, start) + url.substr(at + 1);
}

HttpClient::HttpClient(const RegistryOptions& options) : o_(options) {
  GlobalInit();
  display_url_ = StripCredentials(o_.url, &o_.username, &o_.password);
  while (!display_url_.empty() && display_url_.back() == '/') display_url_.pop_back();
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

std::string HttpClient::Escape(const std::string& segment) {
  char* e = curl_easy_escape(static_cast<CURL*>(curl_), segment.data(),
                             static_cast<int>(segment.size()));
  std::string out = e != nullptr ? e : segment;
  curl_free(e);
  return out;
}

Result<HttpResponse> HttpClient::Request(const std::string& path,
                                         const std::string* body) {
  if (curl_ == nullptr) return Status::IOError("schema registry: cannot start libcurl");
  const std::string url = display_url_ + path;
  auto backoff = o_.retry_backoff;
  for (int attempt = 0;; ++attempt) {
    auto r = Once(url, body);
    const bool again =
        !r.ok() ? r.status().code() == StatusCode::kUnavailable : Retryable(r->status);
    if (!again || attempt >= o_.retries) {
      if (r.ok() && Retryable(r->status)) {
        return Status::Unavailable("schema registry at " + display_url_ + ": " + path +
                                   " answered HTTP " + std::to_string(r->status) +
                                   " after " + std::to_string(attempt + 1) +
                                   " attempt(s)");
      }
      if (!r.ok() && attempt > 0) {
        return Status(r.status().code(), r.status().message() + " (after " +
                                             std::to_string(attempt + 1) + " attempts)");
      }
      return r;
    }
    std::this_thread::sleep_for(backoff);
    backoff *= 2;
  }
}

Result<HttpResponse> HttpClient::Once(const std::string& url, const std::string* body) {
  CURL* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);
  HttpResponse resp;
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp.body);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(o_.timeout.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o_.timeout.count()));
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  if (!o_.username.empty() || !o_.password.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERNAME, o_.username.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, o_.password.c_str());
  }
  if (!o_.bearer_token.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, o_.bearer_token.c_str());
  }
  if (!o_.ca_location.empty())
    curl_easy_setopt(c, CURLOPT_CAINFO, o_.ca_location.c_str());
  if (!o_.certificate_location.empty()) {
    curl_easy_setopt(c, CURLOPT_SSLCERT, o_.certificate_location.c_str());
  }
  if (!o_.key_location.empty())
    curl_easy_setopt(c, CURLOPT_SSLKEY, o_.key_location.c_str());
  if (!o_.key_password.empty()) {
    curl_easy_setopt(c, CURLOPT_KEYPASSWD, o_.key_password.c_str());
  }
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, o_.verify_hostname ? 2L : 0L);
  struct curl_slist* headers = nullptr;
  headers = curl_slist_append(headers,
                              "Accept: application/vnd.schemaregistry.v1+json, "
                              "application/json");
  if (body != nullptr) {
    headers = curl_slist_append(headers,
                                "Content-Type: application/vnd.schemaregistry.v1+json");
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body->size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    // libcurl's messages name the host and the failure, never the credentials.
    std::string why = error[0] != '\0' ? error : curl_easy_strerror(rc);
    return Status::Unavailable("schema registry at " + display_url_ +
                               " did not answer: " + why);
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp.status);
  return resp;
}

}  // namespace kelt::registry
