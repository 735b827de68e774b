/* rn_spm.cc — SentencePiece behind rn_spm.h's C interface (the library's
 * only C++).  No exception leaves this file: each entry point catches and
 * returns an rn_error. */
#include "rn_spm.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "rn_checksum.h"
#include "rn_file.h"
}

struct rn_spm {
    std::string path;
    uint64_t checksum;
    sentencepiece::SentencePieceProcessor proc;
    std::vector<std::string> bytes; /* per id: the bytes it decodes to */
    bool by_line;                   /* encode line by line (rn_spm_encode) */
    std::vector<int> newline;       /* the ids of "\n" alone */
};

namespace {

std::mutex cache_mu;
std::vector<std::unique_ptr<rn_spm>> cache; /* every model loaded, kept for the process */

/* The bytes of piece id in a decoded text (rn_spm.h). */
std::string decoded_bytes(const sentencepiece::SentencePieceProcessor &p, int id)
{
    const std::string &piece = p.IdToPiece(id);
    if (p.IsByte(id) && piece.size() == 6 && piece.compare(0, 3, "<0x") == 0)
        return std::string(1, (char)std::strtol(piece.substr(3, 2).c_str(), nullptr, 16));
    if (p.IsControl(id)) return std::string();
    if (p.IsUnknown(id)) return std::string(" \xe2\x81\x87 ");
    std::string out;
    static const char mark[] = "\xe2\x96\x81"; /* U+2581 */
    for (size_t i = 0; i < piece.size();) {
        if (piece.compare(i, 3, mark) == 0) { out += ' '; i += 3; }
        else out += piece[i++];
    }
    return out;
}

/* Whether the model may encode a text line by line (rn_spm.h): no piece
 * but a byte piece decodes to bytes holding a newline, and a probe of
 * spaces, tabs and newlines comes back byte for byte (no normalisation, no
 * space put before the text, whitespace kept). */
bool line_by_line(const rn_spm &s)
{
    for (size_t i = 0; i < s.bytes.size(); i++)
        if (s.bytes[i].find('\n') != std::string::npos && !s.proc.IsByte((int)i)) return false;
    static const char probe[] = " a\n\n \t b  \n";
    std::vector<int> ids;
    if (!s.proc.Encode(std::string(probe), &ids).ok()) return false;
    std::string back;
    for (int id : ids) {
        if (id < 0 || (size_t)id >= s.bytes.size()) return false;
        back += s.bytes[(size_t)id];
    }
    return back == probe;
}

int load(const char *path, std::unique_ptr<rn_spm> &out, rn_error *err)
{
    char *data;
    size_t len;
    int rc = rn_read_file_max(path, (size_t)1 << 30, &data, &len, err);
    if (rc) return rc;
    std::unique_ptr<rn_spm> s(new rn_spm);
    s->path = path;
    s->checksum = rn_checksum64(data, len);
    auto st = s->proc.LoadFromSerializedProto(std::string(data, len));
    free(data);
    if (!st.ok())
        return rn_seterr(err, RN_EINPUT, "%s: not a SentencePiece model (%s)", path, st.message());
    int n = s->proc.GetPieceSize();
    if (n <= 0) return rn_seterr(err, RN_EINPUT, "%s: SentencePiece model has no pieces", path);
    s->bytes.resize((size_t)n);
    for (int i = 0; i < n; i++) s->bytes[(size_t)i] = decoded_bytes(s->proc, i);
    s->by_line = line_by_line(*s);
    if (s->by_line && !s->proc.Encode(std::string("\n"), &s->newline).ok()) s->by_line = false;
    out = std::move(s);
    return RN_OK;
}

} // namespace

extern "C" int rn_spm_get(const char *path, const rn_spm **spm, rn_error *err)
{
    *spm = nullptr;
    try {
        std::lock_guard<std::mutex> lock(cache_mu);
        for (auto &s : cache)
            if (s->path == path) { *spm = s.get(); return RN_OK; }
        std::unique_ptr<rn_spm> s;
        int rc = load(path, s, err);
        if (rc) return rc;
        *spm = s.get();
        cache.push_back(std::move(s));
        return RN_OK;
    } catch (const std::bad_alloc &) {
        return rn_seterr(err, RN_ENOMEM, "%s: out of memory loading the tokenizer", path);
    } catch (const std::exception &e) {
        return rn_seterr(err, RN_EINPUT, "%s: %s", path, e.what());
    }
}

extern "C" int rn_spm_vocab(const rn_spm *s) { return s->proc.GetPieceSize(); }
extern "C" int rn_spm_bos(const rn_spm *s) { return s->proc.bos_id(); }
extern "C" uint64_t rn_spm_checksum(const rn_spm *s) { return s->checksum; }
extern "C" const char *rn_spm_path(const rn_spm *s) { return s->path.c_str(); }
extern "C" int rn_spm_by_line(const rn_spm *s) { return s->by_line; }

extern "C" int rn_spm_encode(const rn_spm *s, const char *text, size_t len, int **ids, int *n, rn_error *err)
{
    *ids = nullptr;
    *n = 0;
    try {
        std::vector<int> v;
        if (!s->by_line) {
            auto st = s->proc.Encode(std::string(text, len), &v);
            if (!st.ok()) return rn_seterr(err, RN_EINPUT, "%s: cannot encode: %s", s->path.c_str(), st.message());
        }
        std::vector<int> line;
        for (size_t at = 0; s->by_line && at < len;) {
            const char *nl = (const char *)std::memchr(text + at, '\n', len - at);
            size_t end = nl ? (size_t)(nl - text) : len;
            if (end > at) {
                auto st = s->proc.Encode(std::string(text + at, end - at), &line);
                if (!st.ok()) return rn_seterr(err, RN_EINPUT, "%s: cannot encode: %s", s->path.c_str(), st.message());
                v.insert(v.end(), line.begin(), line.end());
            }
            if (nl) v.insert(v.end(), s->newline.begin(), s->newline.end());
            at = end + (nl != nullptr);
        }
        if (v.size() > (size_t)INT32_MAX / 2) return rn_seterr(err, RN_EINPUT, "input too long");
        int *out = (int *)malloc((v.size() ? v.size() : 1) * sizeof *out);
        if (!out) return rn_seterr(err, RN_ENOMEM, "out of memory");
        if (!v.empty()) std::memcpy(out, v.data(), v.size() * sizeof *out);
        *ids = out;
        *n = (int)v.size();
        return RN_OK;
    } catch (const std::bad_alloc &) {
        return rn_seterr(err, RN_ENOMEM, "out of memory encoding %zu bytes", len);
    }
}

extern "C" const char *rn_spm_token_bytes(const rn_spm *s, int id, size_t *len)
{
    if (id < 0 || (size_t)id >= s->bytes.size()) { *len = 0; return ""; }
    *len = s->bytes[(size_t)id].size();
    return s->bytes[(size_t)id].data();
}

extern "C" const char *rn_spm_piece(const rn_spm *s, int id)
{
    if (id < 0 || id >= s->proc.GetPieceSize()) return "";
    return s->proc.IdToPiece(id).c_str();
}

extern "C" int rn_spm_train(const char *const *keys, const char *const *vals, int n, char **model, size_t *len,
                            rn_error *err)
{
    *model = nullptr;
    *len = 0;
    try {
        std::unordered_map<std::string, std::string> kw;
        for (int i = 0; i < n; i++) kw[keys[i]] = vals[i];
        std::string proto;
        auto st = sentencepiece::SentencePieceTrainer::Train(kw, nullptr, &proto);
        if (!st.ok()) return rn_seterr(err, RN_EINPUT, "tokenizer training failed: %s", st.message());
        char *out = (char *)malloc(proto.size() ? proto.size() : 1);
        if (!out) return rn_seterr(err, RN_ENOMEM, "out of memory");
        std::memcpy(out, proto.data(), proto.size());
        *model = out;
        *len = proto.size();
        return RN_OK;
    } catch (const std::bad_alloc &) {
        return rn_seterr(err, RN_ENOMEM, "out of memory training the tokenizer");
    }
}
