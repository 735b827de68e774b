/* kfix.h — the kernel-style fixture for the suites that need a
 * SentencePiece tokenizer and a corpus in the kernel corpus's layout
 * (test_tokshards.c, test_gpu_train.c, test_spm.c's error checks). */
#ifndef KFIX_H
#define KFIX_H

#include <stddef.h>

#include "rn_config.h"

#define KFIX_FIXTURE "tests/data/kernel-style.c"

/* In the test scratch directory, under names starting with prefix: a
 * tokenizer of vocab pieces trained on the fixture and 300 KB of the KJV
 * (*tok), and a text of four copies of the fixture, each after the byte
 * 0x1C as the corpus puts it before each file (*text).  0 on success. */
int kfix_make(const char *prefix, int vocab, char *tok, char *text, size_t cap);

/* The default config with tokenizer = spm:tok and vocab_size = vocab. */
void kfix_spm_config(rn_config *c, const char *tok, int vocab);

/* CUnit assertions: the last command's stderr is one line containing needle. */
void kfix_one_line_error(const char *needle);

#endif
