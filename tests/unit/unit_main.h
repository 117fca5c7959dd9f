/* unit_main.h: the main() every Check unit suite shares: run the suite
 * built by make_suite(), exit non-zero on any failure. */
#ifndef XA_UNIT_MAIN_H
#define XA_UNIT_MAIN_H

#include <check.h>
#include <stdlib.h>

#define XA_UNIT_MAIN(make_suite)                                               \
    int main(void)                                                             \
    {                                                                          \
        SRunner *runner = srunner_create(make_suite());                        \
        srunner_run_all(runner, CK_NORMAL);                                    \
        int failed = srunner_ntests_failed(runner);                            \
        srunner_free(runner);                                                  \
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;                           \
    }

#endif
