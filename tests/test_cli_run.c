/* test_cli_run.c — `ramtrace run` end to end: output, reproducibility,
 * and every bad input giving a one-line message and exit status 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th.h"

static char g_bytes_model[512], g_ids_model[512];

static int setup(void)
{
    snprintf(g_bytes_model, sizeof g_bytes_model, "%s", th_path("run-bytes.bin"));
    snprintf(g_ids_model, sizeof g_ids_model, "%s", th_path("run-ids.bin"));
    if (th_run("%s init --config samples/configs/tiny.cfg --seed 3 -o %s", th_bin(), g_bytes_model)) return -1;
    if (th_run("%s init --config samples/configs/tiny.cfg --tokenizer ids --vocab-size 100 --seed 4 -o %s",
               th_bin(), g_ids_model)) return -1;
    return 0;
}

/* One line on stderr, naming `needle`. */
static void assert_one_line_error(const char *needle)
{
    CU_ASSERT_EQUAL(th_count_lines(th_err()), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), needle));
    if (!strstr(th_err(), needle)) fprintf(stderr, "\nexpected '%s' in: %s", needle, th_err());
}

TH_TEST(test_generates_and_reproduces, "generates, reproducible by seed and threads")
{
    char p[512];
    snprintf(p, sizeof p, "%s", th_path("p.txt"));
    th_write_file(p, "1 2 3 4 5\n", 10);
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 12 --seed 5 --threads 1", th_bin(), g_ids_model, p), 0);
    char first[4096];
    snprintf(first, sizeof first, "%s", th_out());
    /* 12 ids, each in the vocabulary */
    int n = 0, v, off = 0, used;
    while (sscanf(first + off, "%d%n", &v, &used) == 1) { CU_ASSERT(v >= 0 && v < 100); n++; off += used; }
    CU_ASSERT_EQUAL(n, 12);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "tok/s"));
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 12 --seed 5 --threads 2", th_bin(), g_ids_model, p), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), first);
    /* greedy ignores the seed */
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 8 --temperature 0 --seed 1", th_bin(), g_ids_model, p), 0);
    snprintf(first, sizeof first, "%s", th_out());
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 8 --temperature 0 --seed 2", th_bin(), g_ids_model, p), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), first);
    /* bytes model on a text prompt */
    CU_ASSERT_EQUAL(th_run("%s run %s samples/prompts/kjv.txt -n 5", th_bin(), g_bytes_model), 0);
}

TH_TEST(test_bad_inputs, "bad inputs: one line, exit 2")
{
    char p[512], empty[512], word[512], oov[512], trunc[512];
    snprintf(p, sizeof p, "%s", th_path("good.txt"));
    snprintf(empty, sizeof empty, "%s", th_path("empty.txt"));
    snprintf(word, sizeof word, "%s", th_path("word.txt"));
    snprintf(oov, sizeof oov, "%s", th_path("oov.txt"));
    snprintf(trunc, sizeof trunc, "%s", th_path("trunc.bin"));
    th_write_file(p, "1 2 3\n", 6);
    th_write_file(empty, "", 0);
    th_write_file(word, "1 two 3\n", 8);
    th_write_file(oov, "1 2\n100\n", 8);
    CU_ASSERT_EQUAL(th_run("%s run /nonexistent/model.bin %s", th_bin(), p), 2);
    assert_one_line_error("/nonexistent/model.bin");
    CU_ASSERT_EQUAL(th_run("%s run %s /nonexistent/prompt.txt", th_bin(), g_ids_model), 2);
    assert_one_line_error("/nonexistent/prompt.txt");
    CU_ASSERT_EQUAL(th_run("%s run %s %s", th_bin(), g_ids_model, empty), 2);
    assert_one_line_error("empty");
    CU_ASSERT_EQUAL(th_run("%s run %s %s", th_bin(), g_bytes_model, empty), 2);
    assert_one_line_error("empty");
    CU_ASSERT_EQUAL(th_run("%s run %s %s", th_bin(), g_ids_model, word), 2);
    assert_one_line_error("not an integer");
    CU_ASSERT_EQUAL(th_run("%s run %s %s", th_bin(), g_ids_model, oov), 2);
    assert_one_line_error("vocabulary");
    CU_ASSERT_EQUAL(th_run("%s run %s %s --temperature -1", th_bin(), g_ids_model, p), 2);
    assert_one_line_error("--temperature");
    CU_ASSERT_EQUAL(th_run("%s run %s %s --top-p 1.5", th_bin(), g_ids_model, p), 2);
    assert_one_line_error("--top-p");
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n -3", th_bin(), g_ids_model, p), 2);
    assert_one_line_error("--tokens");
    CU_ASSERT_EQUAL(th_run("%s run %s %s --threads 0", th_bin(), g_ids_model, p), 2);
    assert_one_line_error("--threads");
    CU_ASSERT_EQUAL(th_run("%s run %s %s --bogus", th_bin(), g_ids_model, p), 2);
    assert_one_line_error("--bogus");
    CU_ASSERT_EQUAL(th_run("%s run %s", th_bin(), g_ids_model), 2);
    /* a truncated model file */
    CU_ASSERT_EQUAL(th_run("head -c 1000 %s > %s", g_ids_model, trunc), 0);
    CU_ASSERT_EQUAL(th_run("%s run %s %s", th_bin(), trunc, p), 2);
    assert_one_line_error(trunc);
    /* a directory where a file is expected (exit 1 "read error" once) */
    CU_ASSERT_EQUAL(th_run("%s run %s %s", th_bin(), g_ids_model, th_tmpdir()), 2);
    assert_one_line_error("directory");
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s", th_bin(), g_ids_model, th_tmpdir(), th_path("d.db")), 2);
    assert_one_line_error("directory");
    CU_ASSERT_EQUAL(th_run("%s init --config %s -o %s", th_bin(), th_tmpdir(), th_path("d.bin")), 2);
    assert_one_line_error("directory");
    CU_ASSERT_EQUAL(th_run("%s train --task text --data %s --steps 1 -o %s", th_bin(), th_tmpdir(),
                           th_path("d.bin")), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "not a regular file")); /* after the training banner */
    CU_ASSERT_EQUAL(th_run("%s run --help", th_bin()), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_out(), "usage"));
    /* swapped arguments: the one-line error says so */
    CU_ASSERT_EQUAL(th_run("%s run %s %s", th_bin(), p, g_ids_model), 2);
    assert_one_line_error("looks like the model: the order is MODEL PROMPT");
    CU_ASSERT_EQUAL(th_run("%s trace %s %s -o %s", th_bin(), p, g_ids_model, th_path("sw.db")), 2);
    assert_one_line_error("looks like the model: the order is MODEL INPUT");
    /* help CMD is CMD --help */
    CU_ASSERT_EQUAL(th_run("%s help run", th_bin()), 0);
    char *help = strdup(th_out());
    CU_ASSERT_EQUAL(th_run("%s run --help", th_bin()), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), help);
    free(help);
    CU_ASSERT_EQUAL(th_run("%s help nosuch", th_bin()), 2);
    /* - as the prompt reads standard input: the same output as the file */
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 6 -t 0 -q", th_bin(), g_ids_model, p), 0);
    char *from_file = strdup(th_out());
    CU_ASSERT_EQUAL(th_run("cat %s | %s run %s - -n 6 -t 0 -q", p, th_bin(), g_ids_model), 0);
    CU_ASSERT_STRING_EQUAL(th_out(), from_file);
    free(from_file);
    /* -q: no informational lines; errors still one line */
    CU_ASSERT_EQUAL(th_run("%s init --config samples/configs/tiny.cfg -o %s", th_bin(), th_path("q.bin")), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(th_err(), "wrote"));
    CU_ASSERT_EQUAL(th_run("%s init -q --config samples/configs/tiny.cfg -o %s", th_bin(), th_path("q.bin")), 0);
    CU_ASSERT_STRING_EQUAL(th_err(), "");
    CU_ASSERT_EQUAL(th_run("%s run %s %s -n 4 --quiet", th_bin(), g_ids_model, p), 0);
    CU_ASSERT_STRING_EQUAL(th_err(), "");
    CU_ASSERT_EQUAL(th_run("%s run -q /nonexistent/model.bin %s", th_bin(), p), 2);
    assert_one_line_error("/nonexistent/model.bin");
}

TH_SUITE(cli_run, setup, NULL);
