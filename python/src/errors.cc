// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "errors.h"

#include <Python.h>

#include <array>

namespace nb = nanobind;

namespace kelt::python {
namespace {

// Borrowed from the module, which keeps them alive for the interpreter's lifetime.
PyObject* g_kelt_error = nullptr;
PyObject* g_invalid = nullptr;
PyObject* g_parse = nullptr;
PyObject* g_schema_mismatch = nullptr;
PyObject* g_storage = nullptr;
PyObject* g_kafka = nullptr;
PyObject* g_unavailable = nullptr;

PyObject* ClassFor(StatusCode code) {
  switch (code) {
    case StatusCode::kParseError:
      return g_parse;
    case StatusCode::kTypeError:
      return g_schema_mismatch;
    case StatusCode::kIOError:
      return g_storage;
    case StatusCode::kKafka:
      return g_kafka;
    case StatusCode::kUnavailable:
      return g_unavailable;
    default:
      return g_invalid;  // kInvalid, kNotFound, kCancelled, kNotImplemented, kInternal
  }
}

PyObject* NewClass(nb::module_& m, const char* name, const char* doc, PyObject* bases) {
  std::string qualified = std::string("kelt.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (cls == nullptr) throw nb::python_error();
  m.attr(name) = nb::handle(cls);
  Py_DECREF(cls);  // the module attribute holds it
  return cls;
}

void Raise(const Status& status) {
  PyObject* cls = ClassFor(status.code());
  nb::object exc = nb::steal(PyObject_CallFunction(cls, "s", status.message().c_str()));
  if (!exc.is_valid()) return;  // the call set an error already
  std::string code(StatusCodeName(status.code()));
  exc.attr("code") = nb::str(code.c_str());
  exc.attr("retriable") = nb::bool_(status.retriable());
  PyErr_SetObject(cls, exc.ptr());
}

}  // namespace

void RegisterErrors(nb::module_& m) {
  g_kelt_error =
      NewClass(m, "KeltError",
               "Base class of kelt's errors. `code` is the stable error code "
               "(e.g. 'INVALID', 'KAFKA_ERROR'), `retriable` says whether retrying "
               "the same call may succeed.",
               PyExc_Exception);
  nb::object value_bases =
      nb::make_tuple(nb::handle(g_kelt_error), nb::handle(PyExc_ValueError));
  g_invalid = NewClass(m, "InvalidError",
                       "Bad input: a schema, config, argument or value kelt cannot use.",
                       value_bases.ptr());
  g_parse = NewClass(m, "ParseError", "Input that is not well-formed JSON or text.",
                     nb::make_tuple(nb::handle(g_invalid)).ptr());
  g_schema_mismatch =
      NewClass(m, "SchemaMismatchError",
               "A value that does not convert to its landing type (RDP's 'schema "
               "mismatch').",
               nb::make_tuple(nb::handle(g_invalid)).ptr());
  nb::object os_bases =
      nb::make_tuple(nb::handle(g_kelt_error), nb::handle(PyExc_OSError));
  g_storage = NewClass(m, "StorageError",
                       "Local or remote storage failed (files, object store, database).",
                       os_bases.ptr());
  g_kafka = NewClass(m, "KafkaError", "The Kafka client or broker reported an error.",
                     nb::make_tuple(nb::handle(g_storage)).ptr());
  g_unavailable =
      NewClass(m, "UnavailableError", "A transient condition; retrying may succeed.",
               nb::make_tuple(nb::handle(g_storage)).ptr());

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      Raise(e.status());
    }
  });
}

}  // namespace kelt::python
