"""embed"""
