/* fuzz_config.c — fuzz target: config text (rn_config_parse_text).
 *
 * Input: the text of a `key = value` file; the first byte's low bit also
 * decides whether unknown keys go to a callback (as the trainer's keys do)
 * or are errors.  Checks: a failure is RN_EINPUT with one line; a parsed
 * config that validates formats (rn_config_format) and parses back to the
 * same config, field by field and bit for bit; derived sizes are defined. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "rn_config.h"
#include "rn_params.h" /* rn_config_param_count */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static int extra_key(void *user, const char *key, const char *value, rn_error *err)
{
    (void)err;
    fuzz_check(key && value, "%s", "extra key callback got NULL");
    (*(int *)user)++;
    return RN_OK;
}

/* The same config, every field (floats bitwise). */
static int same_config(const rn_config *a, const rn_config *b)
{
    return a->vocab_size == b->vocab_size && a->d_model == b->d_model && a->n_layers == b->n_layers &&
           a->n_heads == b->n_heads && a->d_p == b->d_p && a->order == b->order && a->d_v == b->d_v &&
           a->top_k == b->top_k && a->d_ff == b->d_ff && !memcmp(&a->gamma, &b->gamma, 4) &&
           !memcmp(&a->tau, &b->tau, 4) && !memcmp(&a->eps, &b->eps, 4) &&
           !memcmp(&a->norm_eps, &b->norm_eps, 4) && a->tie_embeddings == b->tie_embeddings &&
           a->tokenizer == b->tokenizer && !memcmp(a->cape_mask, b->cape_mask, sizeof a->cape_mask);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536) return 0;
    char *text = malloc(size + 1);
    fuzz_check(text != NULL, "%s", "out of memory");
    memcpy(text, data, size);
    text[size] = 0;
    int extras = 0, use_extra = size && (data[0] & 1);
    rn_config c;
    rn_config_default(&c);
    rn_error err = { 0 };
    int rc = rn_config_parse_text(&c, text, "fuzz.cfg", use_extra ? extra_key : NULL, &extras, &err);
    free(text);
    if (rc) {
        fuzz_check_error(rc, &err, FUZZ_CODE(RN_EINPUT), "rn_config_parse_text");
        return 0;
    }
    if ((rc = rn_config_validate(&c, &err))) {
        fuzz_check_error(rc, &err, FUZZ_CODE(RN_EINPUT), "rn_config_validate");
        return 0;
    }
    char buf[16384];
    size_t need = rn_config_format(&c, buf, sizeof buf);
    fuzz_check(need < sizeof buf, "formatted config needs %zu bytes", need);
    rn_config back;
    rn_config_default(&back);
    rc = rn_config_parse_text(&back, buf, "formatted", NULL, NULL, &err);
    fuzz_check(rc == RN_OK, "the formatted config does not parse: %s\n%s", err.msg, buf);
    fuzz_check(same_config(&c, &back), "format/parse round trip changed the config:\n%s", buf);
    fuzz_check(rn_config_slots(&c) >= 1 && rn_config_slots(&c) <= RN_MAX_SLOTS, "slots %lld",
               (long long)rn_config_slots(&c));
    fuzz_check(rn_config_param_count(&c) > 0, "%s", "parameter count");
    fuzz_check(rn_config_total_state(&c) > 0 && rn_config_active_state(&c) > 0, "%s", "state sizes");
    return 0;
}
