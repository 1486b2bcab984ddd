/* Optional C accelerator of ZS and ZSS data-block bodies (shardkit.formats._records).
 *
 * A body is a run of records, each a uleb128 length then that many bytes.
 *
 * split(body) -> list of the records as bytes, or None when the body is not well formed (a
 *   non-minimal or over-long uleb128, one cut off, a record past the end): the Python decoder
 *   in _sorted_set.py then says where.
 * check_sorted(body) -> (count, bad, first, last): the number of records, the index of the
 *   first record below the one before it (-1 when they are in order, compared as Python
 *   compares bytes), the first and the last record (None when there are none); None when the
 *   body is not well formed. No record becomes a Python object but the first and the last,
 *   and the scan runs without the GIL.
 *
 * Both have pure-Python twins (decode_records and a loop over its list); the tests run both on
 * the same bodies.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_ULEB_BYTES 9 /* _sorted_set.MAX_ULEB_BYTES */

/* The record at *pos: its start and length; 0 when it is not well formed. */
static inline int next_record(const unsigned char *b, Py_ssize_t n, Py_ssize_t *pos,
                              Py_ssize_t *start, Py_ssize_t *len) {
    Py_ssize_t p = *pos, begin = p;
    unsigned long long v = 0;
    int shift = 0;
    for (;;) {
        if (p >= n) return 0;
        unsigned char c = b[p++];
        if (shift < 63) v |= (unsigned long long)(c & 0x7F) << shift;
        else if (c & 0x7F) return 0; /* far past any body's size */
        if (!(c & 0x80)) {
            if (c == 0 && p - begin > 1) return 0; /* non-minimal */
            break;
        }
        shift += 7;
        if (p - begin >= MAX_ULEB_BYTES) return 0;
    }
    if (v > (unsigned long long)(n - p)) return 0;
    *start = p;
    *len = (Py_ssize_t)v;
    *pos = p + (Py_ssize_t)v;
    return 1;
}

static int get_body(PyObject *obj, Py_buffer *view) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) return -1;
    return 0;
}

static PyObject *split(PyObject *mod, PyObject *arg) {
    Py_buffer view;
    if (get_body(arg, &view) < 0) return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len, pos = 0, start, len, count = 0;
    /* count first (no allocation on a malformed body), then fill a list of that size */
    while (pos < n) {
        if (!next_record(b, n, &pos, &start, &len)) {
            PyBuffer_Release(&view);
            Py_RETURN_NONE;
        }
        count++;
    }
    PyObject *out = PyList_New(count);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    pos = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        next_record(b, n, &pos, &start, &len);
        PyObject *rec = PyBytes_FromStringAndSize((const char *)b + start, len);
        if (rec == NULL) {
            Py_DECREF(out);
            PyBuffer_Release(&view);
            return NULL;
        }
        PyList_SET_ITEM(out, i, rec);
    }
    PyBuffer_Release(&view);
    return out;
}

/* a < b as Python compares bytes */
static inline int below(const unsigned char *a, Py_ssize_t la, const unsigned char *b,
                        Py_ssize_t lb) {
    int c = memcmp(a, b, la < lb ? la : lb);
    return c < 0 || (c == 0 && la < lb);
}

static PyObject *check_sorted(PyObject *mod, PyObject *arg) {
    Py_buffer view;
    if (get_body(arg, &view) < 0) return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len, pos = 0, start = 0, len = 0, count = 0, bad = -1;
    Py_ssize_t first_s = 0, first_l = 0, prev_s = 0, prev_l = 0;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    while (pos < n) {
        if (!next_record(b, n, &pos, &start, &len)) {
            ok = 0;
            break;
        }
        if (count == 0) {
            first_s = start;
            first_l = len;
        } else if (bad < 0 && below(b + start, len, b + prev_s, prev_l)) {
            bad = count;
        }
        prev_s = start;
        prev_l = len;
        count++;
    }
    Py_END_ALLOW_THREADS
    PyObject *out;
    if (!ok) {
        out = Py_None;
        Py_INCREF(out);
    } else if (count == 0) {
        out = Py_BuildValue("(nnOO)", count, bad, Py_None, Py_None);
    } else {
        out = Py_BuildValue("(nny#y#)", count, bad, (const char *)b + first_s, first_l,
                            (const char *)b + prev_s, prev_l);
    }
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"split", split, METH_O, "the records of a data-block body, or None when malformed"},
    {"check_sorted", check_sorted, METH_O,
     "(count, first out-of-order index or -1, first, last) of a body, or None when malformed"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_records",
                                    "uleb128-prefixed record bodies (ZS, ZSS)", -1, methods};

PyMODINIT_FUNC PyInit__records(void) { return PyModule_Create(&module); }
