/* check.h: the CHECK macro of the native C tests. Each test file includes it
 * once and prints `checks` and `failures` at the end. */
#ifndef ATTENTION_TEST_CHECK_H
#define ATTENTION_TEST_CHECK_H

#include <stdio.h>

static int failures, checks;

/* Count a check; on failure print where and a printf-style message. */
#define CHECK(cond, ...)                                         \
    do {                                                         \
        checks++;                                                \
        if (!(cond)) {                                           \
            failures++;                                          \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);          \
            printf(__VA_ARGS__);                                 \
            printf("\n");                                        \
        }                                                        \
    } while (0)

#endif
