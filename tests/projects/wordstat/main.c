#include <math.h>
#include <stdio.h>
#include "count.h"

int main(int argc, char **argv)
{
	const char *text = argc > 1 ? argv[1] : "the quick brown fox";

	printf("words=%zu mean=%.2f sqrt=%.3f\n", count_words(text),
	       mean_word_length(text), sqrt((double)count_words(text)));
	return 0;
}
