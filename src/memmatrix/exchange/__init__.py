"""memmatrix.exchange"""
