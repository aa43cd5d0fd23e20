"""Operations across parts: forget / erasure of the log and of the derived stores registered with it."""
