/* rn_modelinfo.c — what `ramtrace info` prints (rn_modelinfo.h): the
 * description text, or the same facts as section,key,value rows through
 * the row writer (core/base/rn_rows.h). */
#include "rn_modelinfo.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rn_modelfile.h"
#include "rn_rows.h"
#include "rn_storage.h"

int64_t rn_config_param_count_noembed(const rn_config *c)
{
    int64_t emb = (int64_t)c->vocab_size * c->d_model;
    return rn_config_param_count(c) - emb * (c->tie_embeddings ? 1 : 2);
}

/* "12345 (12.1 KiB)" style byte counts. */
static void human(char *out, size_t cap, double bytes)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    while (bytes >= 1024 && u < 4) { bytes /= 1024; u++; }
    snprintf(out, cap, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

/* The next "key = value" line of rn_config_format's text at *at (cut in
 * place); 0 at the end. */
static int next_key(char **at, char **key, char **val)
{
    while (**at) {
        char *line = *at, *nl = strchr(line, '\n');
        if (nl) { *nl = 0; *at = nl + 1; }
        else *at = line + strlen(line);
        char *eq = strstr(line, " = ");
        if (eq) {
            *eq = 0;
            *key = line;
            *val = eq + 3;
            return 1;
        }
    }
    return 0;
}

/* The file's format as info shows it: "model.bin v1", "model.bin v2" (a
 * SentencePiece model's file: docs/model-format.md) or "safetensors", with
 * ", storage bf16" / ", storage fp16" for a 16-bit file. */
static const char *format_name(const rn_model *m, const char *path, char *buf, size_t cap)
{
    const char *kind = rn_path_is_safetensors(path) ? "safetensors"
                       : m->cfg.tokenizer == RN_TOK_SPM ? "model.bin v2" : "model.bin v1";
    snprintf(buf, cap, "%s%s%s", kind, m->storage ? ", storage " : "", m->storage ? rn_storage_name(m->storage) : "");
    return buf;
}

void rn_model_describe(FILE *f, const rn_model *m, const char *path)
{
    char fmt[64];
    const rn_config *c = &m->cfg;
    struct stat st;
    long long fsize = stat(path, &st) == 0 ? (long long)st.st_size : -1;
    char h1[32], h2[32];
    fprintf(f, "file              %s\n", path);
    fprintf(f, "format            %s\n", format_name(m, path, fmt, sizeof fmt));
    human(h1, sizeof h1, (double)fsize);
    fprintf(f, "file size         %lld bytes (%s)\n", fsize, h1);
    fprintf(f, "checksum          %016" PRIx64 "\n", rn_model_checksum(m));
    fprintf(f, "\nconfig\n");
    /* every key as rn_config_format writes it (floats in shortest exact text) */
    char text[RN_MAX_LAYERS * 22 + 1024], *key, *val, *at = text;
    rn_config_format(c, text, sizeof text);
    while (next_key(&at, &key, &val)) fprintf(f, "  %-16s%s\n", key, val);
    int64_t np = rn_config_param_count(c), tot = rn_config_total_state(c), act = rn_config_active_state(c);
    fprintf(f, "\nderived\n");
    fprintf(f, "  d_k             %d (order x d_p)\n", rn_config_dk(c));
    fprintf(f, "  slots M         %" PRId64 " (d_p^order)\n", rn_config_slots(c));
    human(h1, sizeof h1, (double)np * 4);
    fprintf(f, "  parameters      %" PRId64 " (%s as float32); %" PRId64 " without embeddings\n",
            np, h1, rn_config_param_count_noembed(c));
    human(h1, sizeof h1, (double)tot * 4);
    human(h2, sizeof h2, (double)act * 4);
    fprintf(f, "  total state     %" PRId64 " floats = %" PRId64 " bytes (%s): L*H*M*(d_v+1)\n", tot, tot * 4, h1);
    fprintf(f, "  active state    %" PRId64 " floats = %" PRId64 " bytes (%s) per token: L*H*2K*(d_v+1)\n", act, act * 4, h2);
    fprintf(f, "\nCAPE heads\n");
    for (int l = 0; l < c->n_layers; l++) {
        int n = 0;
        for (int h = 0; h < c->n_heads; h++) n += rn_config_cape(c, l, h);
        fprintf(f, "  layer %-10d%d/%d", l, n, c->n_heads);
        if (n == c->n_heads) fprintf(f, " (all)");
        else if (n) {
            fprintf(f, ":");
            for (int h = 0; h < c->n_heads; h++)
                if (rn_config_cape(c, l, h)) fprintf(f, " %d", h);
        }
        fprintf(f, "\n");
    }
}

/* A config value as a cell: an integer or a real when the whole text is
 * one (the text is the shortest exact form, so it prints back the same),
 * else text. */
static rn_cell config_cell(const char *v)
{
    char *end;
    if (*v && *v != ' ') {
        long long i = strtoll(v, &end, 10);
        if (!*end) return rn_cell_int(i);
        double d = strtod(v, &end);
        if (!*end) return rn_cell_real(d, NULL);
    }
    return rn_cell_text(v);
}

static int add3(rn_rows *w, const char *section, const char *key, rn_cell v)
{
    const rn_cell c[3] = { rn_cell_text(section), rn_cell_text(key), v };
    return rn_rows_add(w, c);
}

int rn_model_info_rows(FILE *f, int fmt, const rn_model *m, const char *path, rn_error *err)
{
    const rn_config *c = &m->cfg;
    static const char *const cols[3] = { "section", "key", "value" };
    rn_rows w;
    int rc = rn_rows_begin(&w, f, fmt, 3, cols, NULL, err);
    if (rc) return rc;
    struct stat st;
    char buf[64];
    add3(&w, "file", "path", rn_cell_text(path));
    char fmtname[64];
    add3(&w, "file", "format", rn_cell_text(format_name(m, path, fmtname, sizeof fmtname)));
    add3(&w, "file", "size_bytes", stat(path, &st) == 0 ? rn_cell_int((int64_t)st.st_size) : rn_cell_null(NULL));
    snprintf(buf, sizeof buf, "%016" PRIx64, rn_model_checksum(m));
    add3(&w, "file", "checksum", rn_cell_text(buf));
    char text[RN_MAX_LAYERS * 22 + 1024], *key, *val, *at = text;
    rn_config_format(c, text, sizeof text);
    while (next_key(&at, &key, &val)) add3(&w, "config", key, config_cell(val));
    int64_t tot = rn_config_total_state(c), act = rn_config_active_state(c);
    add3(&w, "derived", "d_k", rn_cell_int(rn_config_dk(c)));
    add3(&w, "derived", "slots", rn_cell_int(rn_config_slots(c)));
    add3(&w, "derived", "parameters", rn_cell_int(rn_config_param_count(c)));
    add3(&w, "derived", "parameters_noembed", rn_cell_int(rn_config_param_count_noembed(c)));
    add3(&w, "derived", "total_state_floats", rn_cell_int(tot));
    add3(&w, "derived", "total_state_bytes", rn_cell_int(tot * 4));
    add3(&w, "derived", "active_state_floats", rn_cell_int(act));
    add3(&w, "derived", "active_state_bytes", rn_cell_int(act * 4));
    for (int l = 0; l < c->n_layers; l++) {
        char key[16], heads[RN_MAX_HEADS * 6 + 1];
        size_t k = 0;
        heads[0] = 0;
        for (int h = 0; h < c->n_heads; h++)
            if (rn_config_cape(c, l, h)) k += (size_t)snprintf(heads + k, sizeof heads - k, "%s%d", k ? "," : "", h);
        snprintf(key, sizeof key, "layer%d", l);
        add3(&w, "cape_heads", key, rn_cell_text(heads));
    }
    return rn_rows_end(&w, err);
}
