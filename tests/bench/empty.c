/* The cost of a process start: fork, exec, exit. */
int main(void) { return 0; }
