"""memmatrix.common"""
