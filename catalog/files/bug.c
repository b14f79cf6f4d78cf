/* The catalog's cppcheck input: a write one past the end of an array. */
int main(void)
{
	int a[2];

	a[2] = 1;
	return a[0];
}
