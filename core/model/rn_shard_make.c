/* rn_shard_make.c — a text file into a set of shards (rn_shard_make.h). */
#include "rn_shard_make.h"
#include "rn_shard.h"
#include "rn_spm.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK ((size_t)16 << 20) /* bytes of text read at a time */

typedef struct {
    const rn_shards_opts *o;
    const rn_spm *s;
    char tmpdir[4096];
    uint16_t *buf;        /* the shard being filled */
    int64_t fill;
    uint64_t fill_bytes;  /* its tokens' bytes */
    uint16_t *held;       /* the last full shard, written once it is known whether it is the last */
    int64_t held_n;
    uint64_t held_bytes;
    rn_shards_stats *st;
} maker;

/* Write the held shard (index st->shards) as the last or not. */
static int flush_held(maker *m, int last, rn_error *err)
{
    if (!m->held_n) return RN_OK;
    char p[4200];
    snprintf(p, sizeof p, "%s/shard-%05d.rns", m->tmpdir, m->st->shards);
    rn_shard_info h = { (uint32_t)rn_spm_vocab(m->s), m->o->doc_sep, rn_spm_checksum(m->s), (uint64_t)m->held_n,
                        m->held_bytes, (uint32_t)m->st->shards, (uint32_t)last };
    int rc = rn_shard_write(p, &h, m->held, m->o->level, err);
    if (rc) return rc;
    struct stat sb;
    if (stat(p, &sb) == 0) m->st->compressed += sb.st_size;
    m->st->shards++;
    m->held_n = 0;
    return RN_OK;
}

/* Append ids (stopping at max_tokens); a full shard becomes the held one. */
static int add_ids(maker *m, const int *ids, int n, rn_error *err)
{
    for (int i = 0; i < n; i++) {
        if (m->o->max_tokens && m->st->tokens >= m->o->max_tokens) return RN_OK;
        if (m->st->tokens >= INT32_MAX / 2) /* what rn_shards_load takes: refused now, not after hours */
            return rn_seterr(err, RN_EINPUT, "%s: more than %d tokens, the most a shard set holds; keep fewer with --max-tokens",
                             m->o->text, INT32_MAX / 2);
        size_t len;
        rn_spm_token_bytes(m->s, ids[i], &len);
        m->buf[m->fill++] = (uint16_t)ids[i];
        m->fill_bytes += len;
        m->st->token_bytes += (int64_t)len;
        m->st->tokens++;
        if (m->fill == m->o->shard_tokens) {
            int rc = flush_held(m, 0, err);
            if (rc) return rc;
            uint16_t *t = m->held;
            m->held = m->buf;
            m->buf = t;
            m->held_n = m->fill;
            m->held_bytes = m->fill_bytes;
            m->fill = 0;
            m->fill_bytes = 0;
        }
    }
    return RN_OK;
}

static int encode_block(maker *m, const char *text, size_t len, rn_error *err)
{
    int *ids, n;
    int rc = rn_spm_encode(m->s, text, len, &ids, &n, err);
    if (rc) return rn_preferr(err, "%s", m->o->text);
    rc = add_ids(m, ids, n, err);
    free(ids);
    return rc;
}

/* Remove the temp directory's files and the directory. */
static void remove_tmpdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Read and encode the whole text (the maker's buffers allocated). */
static int encode_text(maker *m, FILE *f, rn_error *err)
{
    const rn_shards_opts *o = m->o;
    int bos = rn_spm_bos(m->s);
    int rc = bos >= 0 ? add_ids(m, &bos, 1, err) : RN_OK;
    int by_line = rn_spm_by_line(m->s);
    size_t cap = by_line ? BLOCK : (size_t)m->st->bytes_total + 1, have = 0;
    char *text = malloc(cap);
    if (!text) return rn_seterr(err, RN_ENOMEM, "%s: out of memory for %zu bytes", o->text, cap);
    int eof = 0;
    while (!rc && !eof && !(o->max_tokens && m->st->tokens >= o->max_tokens)) {
        if (have == cap) {
            char *t = realloc(text, cap * 2); /* a line longer than the block */
            if (!t) { rc = rn_seterr(err, RN_ENOMEM, "%s: out of memory for a line", o->text); break; }
            text = t;
            cap *= 2;
        }
        size_t got = fread(text + have, 1, cap - have, f);
        if (got == 0 && ferror(f)) { rc = rn_seterr(err, RN_EIO, "%s: read error: %s", o->text, strerror(errno)); break; }
        have += got;
        eof = got == 0 || feof(f);
        size_t cut = have;
        if (!eof) {
            while (cut > 0 && text[cut - 1] != '\n') cut--;
            if (!by_line || cut == 0) continue; /* read on: the whole text, or the rest of a long line */
        }
        if (cut && (rc = encode_block(m, text, cut, err))) break;
        m->st->bytes_read += (int64_t)cut;
        memmove(text, text + cut, have - cut);
        have -= cut;
        if (o->progress) o->progress(o->ctx, m->st);
    }
    free(text);
    return rc;
}

int rn_shards_make(const rn_shards_opts *o, rn_shards_stats *st, rn_error *err)
{
    memset(st, 0, sizeof *st);
    if (o->shard_tokens < 1 || (uint64_t)o->shard_tokens > RN_SHARD_MAX_TOKENS)
        return rn_seterr(err, RN_EINPUT, "--shard-tokens: %lld outside 1..%llu", (long long)o->shard_tokens,
                         (unsigned long long)RN_SHARD_MAX_TOKENS);
    if (o->max_tokens < 0) return rn_seterr(err, RN_EINPUT, "--max-tokens: %lld is negative", (long long)o->max_tokens);
    maker m = { .o = o, .st = st };
    int rc = rn_spm_get(o->tokenizer, &m.s, err);
    if (rc) return rc;
    if (rn_spm_vocab(m.s) > 65536)
        return rn_seterr(err, RN_EINPUT, "%s: %d pieces do not fit uint16 ids (at most 65536)", o->tokenizer, rn_spm_vocab(m.s));
    struct stat sb;
    if (stat(o->dir, &sb) == 0) return rn_seterr(err, RN_EINPUT, "%s: exists; remove it or name another directory", o->dir);
    FILE *f = fopen(o->text, "rb");
    if (!f) return rn_seterr(err, RN_EINPUT, "%s: cannot open: %s", o->text, strerror(errno));
    if (fstat(fileno(f), &sb) != 0) {
        int e = errno;
        fclose(f);
        return rn_seterr(err, RN_EIO, "%s: cannot stat: %s", o->text, strerror(e));
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size == 0) {
        fclose(f);
        return rn_seterr(err, RN_EINPUT, "%s: %s", o->text, S_ISREG(sb.st_mode) ? "text is empty" : "not a regular file");
    }
    st->bytes_total = sb.st_size;
    if (snprintf(m.tmpdir, sizeof m.tmpdir, "%s.tmpXXXXXX", o->dir) >= (int)sizeof m.tmpdir || !mkdtemp(m.tmpdir)) {
        fclose(f);
        return rn_seterr(err, RN_EINPUT, "%s: cannot make a directory beside it: %s", o->dir, strerror(errno));
    }
    mode_t mask = umask(0); /* mkdtemp makes it 0700: give it a directory's usual mode */
    umask(mask);
    chmod(m.tmpdir, 0777 & ~mask);
    m.buf = malloc((size_t)o->shard_tokens * sizeof *m.buf);
    m.held = malloc((size_t)o->shard_tokens * sizeof *m.held);
    if (!m.buf || !m.held) rc = rn_seterr(err, RN_ENOMEM, "out of memory for shards of %lld tokens", (long long)o->shard_tokens);
    if (!rc) rc = encode_text(&m, f, err);
    fclose(f);
    if (!rc && m.fill) {
        rc = flush_held(&m, 0, err);
        uint16_t *t = m.held;
        m.held = m.buf;
        m.buf = t;
        m.held_n = m.fill;
        m.held_bytes = m.fill_bytes;
    }
    if (!rc) rc = flush_held(&m, 1, err);
    if (!rc && st->shards == 0) rc = rn_seterr(err, RN_EINPUT, "%s: no tokens", o->text);
    if (!rc && rename(m.tmpdir, o->dir) != 0)
        rc = rn_seterr(err, RN_EIO, "%s: cannot rename %s to it: %s", o->dir, m.tmpdir, strerror(errno));
    if (rc) remove_tmpdir(m.tmpdir);
    if (!rc && o->progress) o->progress(o->ctx, st);
    free(m.buf);
    free(m.held);
    return rc;
}
