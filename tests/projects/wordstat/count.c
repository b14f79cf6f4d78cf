#include <ctype.h>
#include "count.h"

size_t count_words(const char *text)
{
	size_t n = 0;
	int in_word = 0;

	for (; *text; text++) {
		if (isspace((unsigned char)*text))
			in_word = 0;
		else if (!in_word) {
			in_word = 1;
			n++;
		}
	}
	return n;
}

double mean_word_length(const char *text)
{
	size_t letters = 0, words = count_words(text);

	for (; *text; text++)
		letters += !isspace((unsigned char)*text);
	return words ? (double)letters / words : 0.0;
}
