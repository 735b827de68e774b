/* kfix.c — the kernel-style fixture's tokenizer and corpus (kfix.h). */
#include "kfix.h"

#include <stdio.h>
#include <string.h>

#include "th.h"

int kfix_make(const char *prefix, int vocab, char *tok, char *text, size_t cap)
{
    char kjv[512];
    snprintf(tok, cap, "%s/%s_tok.model", th_tmpdir(), prefix);
    snprintf(text, cap, "%s/%s_text.txt", th_tmpdir(), prefix);
    snprintf(kjv, sizeof kjv, "%s/%s_kjv.txt", th_tmpdir(), prefix);
    if (th_run("head -c 300000 data/kjv.txt > %s", kjv)) return -1;
    if (th_run("%s -q tokenizer train --vocab %d %s %s -o %s", th_bin(), vocab, KFIX_FIXTURE, kjv, tok)) return -1;
    return th_run("for i in 1 2 3 4; do printf '\\034'; cat %s; done > %s", KFIX_FIXTURE, text) ? -1 : 0;
}

void kfix_spm_config(rn_config *c, const char *tok, int vocab)
{
    char spec[600];
    snprintf(spec, sizeof spec, "spm:%s", tok);
    rn_config_default(c);
    rn_error err;
    CU_ASSERT_EQUAL(rn_config_set(c, "tokenizer", spec, &err), RN_OK);
    c->vocab_size = vocab;
}

void kfix_one_line_error(const char *needle)
{
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), needle));
    if (!strstr(th_err(), needle)) fprintf(stderr, "\nexpected '%s' in: %s", needle, th_err());
}
