#ifndef COUNT_H
#define COUNT_H
#include <stddef.h>

size_t count_words(const char *text);
double mean_word_length(const char *text);
#endif
